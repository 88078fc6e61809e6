"""The comparison matrix: cells of the presets, and a manifest entry back to its cell.

    python -m pytest tests/unit/test_matrix.py
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from hvd_vs_ddp.cli import cell_command, matrix, presets
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.common.checkout import ROOT


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
def test_manifest_entry_gives_back_the_same_cell(preset):
    """--resume rebuilds cells from manifest.json: knob set and suite args included."""
    cells = matrix.cells(presets.PRESETS[preset], world_sizes=[1, 2])
    for cell in cells:
        cell = dataclasses.replace(cell, pytest_args=("--rounds", "3"))
        entry = json.loads(json.dumps(dict(cell.as_dict(), status="failed", error="x")))
        assert Cell.from_dict(entry) == cell
        assert Cell.from_dict(entry).id == entry["id"]


def test_full_preset_has_knob_set_cells_with_their_own_ids():
    ids = [c.id for c in matrix.cells(presets.PRESETS["full"], world_sizes=[2])]
    assert len(ids) == len(set(ids))
    assert "horovod-horovodrun-gloo-np2-fp16-compress" in ids
    assert "ddp-gloo-torchrun-np2-bucket1mb" in ids


def test_run_names_with_path_separators_are_refused():
    for bad in ("a/b", "../x", "..", "", "/abs"):
        with pytest.raises(matrix.MatrixError):
            matrix.check_name(bad)
    assert matrix.check_name("2026-11-22_quick.v1") == "2026-11-22_quick.v1"


@pytest.mark.skipif(matrix._gpus() > 0, reason="the CPU-machine matrix")
def test_quick_on_a_cpu_machine_compares_at_two_ranks_with_single_as_the_reference():
    quick = presets.PRESETS["quick"]
    ids = [c.id for c in matrix.cells(quick)]
    assert [i for i in ids if i.endswith("np1")] == ["single-single-np1"]
    assert not any(i.startswith("dp-") for i in ids)  # DataParallel on a CPU is `single`
    assert "compute-only-torchrun-np2" in ids and "compute-only-single-np1" not in ids
    assert quick.options.collective_ops == ("allreduce",)
    # asked for by name, a backend runs at one rank even in quick; dp too
    named = [c.id for c in matrix.cells(quick, ["dp", "horovod"], [1])]
    assert named == ["dp-single-np1", "horovod-single-np1"]
    full = [c.id for c in matrix.cells(presets.PRESETS["full"], world_sizes=[1])]
    assert "horovod-single-np1-default" in full or "horovod-single-np1" in full


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
def test_every_horovod_cell_with_ranks_has_one_timeline_twin(preset):
    p = presets.PRESETS[preset]
    cells = matrix.cells(p, world_sizes=[1, 2])
    twins = [c for c in cells if c.suites == ("timeline",)]
    if not p.timeline:  # the tune preset: no instrumented twins
        assert not twins
        return
    first = matrix.SETS[p.knob_set][0].name
    compiling = {k.name for k in matrix.SETS[p.knob_set] if k.compile != "eager"}
    timed = [c for c in cells if c.backend == "horovod" and c.world_size > 1
             and "throughput" in c.suites and (c.knob_set == first or c.knob_set in compiling)]
    assert sorted(c.id for c in twins) == sorted(f"{c.id}-timeline" for c in timed)
    assert timed and all(c.backend == "horovod" and c.world_size > 1 for c in twins)
    assert cell_command.cell_options(twins[0], p).horovod_timeline == "auto"
    assert all(c.suites != ("timeline",) for c in
               matrix.cells(dataclasses.replace(p, timeline=False), world_sizes=[1, 2]))


def test_a_knob_set_the_backend_cannot_honour_gets_no_cell():
    """PowerSGD over Gloo aborts now and then (hvd_vs_ddp/backends/ddp.py): the tune preset makes no
    ddp-gloo PowerSGD cell rather than one whose every test skips."""
    ids = [c.id for c in matrix.cells(presets.PRESETS["tune"], world_sizes=[2])]
    assert "ddp-gloo-torchrun-np2-ddp-static-graph" in ids
    assert not [i for i in ids if i.startswith("ddp-gloo-") and "powersgd" in i]


def test_a_cells_pytest_loads_pytest_benchmark_and_no_other_installed_plugin(tmp_path):
    """A cell's measurement runs no plugin it did not ask for: hypothesis and xdist are
    installed here (for these tests) and a real pytest with the cell's plugin arguments
    must load neither, but pytest-benchmark. (Which plugins load is settled at pytest's
    start, whatever it collects: an empty folder spares it importing torch.)"""
    p = presets.PRESETS["quick"]
    cell = next(c for c in matrix.cells(p, world_sizes=[1]) if c.backend == "single")
    argv = cell_command.pytest_argv(cell, "plan.json", "out.json")
    plugins = argv[argv.index("pytest") + 1:argv.index("pytest") + 1 + len(
        cell_command.CELL_PLUGINS)]
    assert plugins == list(cell_command.CELL_PLUGINS)
    out = subprocess.run([sys.executable, "-m", "pytest", *plugins, "-p", "no:cacheprovider",
                          "--collect-only", "--trace-config", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    active = out.stdout[out.stdout.index("active plugins:"):]
    assert "pytest_benchmark/plugin.py" in active
    assert "_hypothesis_pytestplugin" not in active and "xdist/plugin.py" not in active, active
    # and without the arguments, the same pytest loads them (the check can fail)
    plain = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                            "--collect-only", "--trace-config", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120).stdout
    assert "_hypothesis_pytestplugin" in plain[plain.index("active plugins:"):]


@pytest.mark.parametrize("suites, compute_only, twins", [
    (None, True, True), ("throughput", False, False), ("throughput,timeline", False, True),
    ("throughput,compute", True, False), ("convergence,collectives", False, False)])
def test_run_suites_chooses_the_suites_and_their_reference_and_twin_cells(
        tmp_path, monkeypatch, suites, compute_only, twins):
    """`run --suites`: only the named suites of the preset; the compute-only reference
    cells come with 'compute', the Horovod timeline twins with 'timeline'."""
    from hvd_vs_ddp.cli import app, run_request

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--runs-dir", "runs", "--backends", "ddp-gloo,horovod", "--world-sizes",
            "1,2", "--workloads", "mlp", *(["--suites", suites] if suites else [])]
    cells = run_request.build(app.parser().parse_args(argv)).cells
    assert any(c.backend == matrix.COMPUTE_ONLY for c in cells) == compute_only
    assert any(c.suites == ("timeline",) for c in cells) == twins
    trained = {s for c in cells for s in c.suites if s not in ("compute", "timeline")}
    want = set((suites or "throughput,convergence,collectives").split(",")) - {
        "compute", "timeline"}
    assert trained == want
    assert not (tmp_path / "runs").exists()  # judged, nothing written


def test_a_launcher_named_by_the_user_is_never_left_out(tmp_path, monkeypatch):
    """The quick preset leaves spawn out of its matrix; `--launchers spawn` brings it back
    (before, the run refused with "no cell"), and only spawn above one rank."""
    from hvd_vs_ddp.cli import app, run_request

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--runs-dir", "runs", "--backends", "ddp-gloo", "--world-sizes", "2",
            "--workloads", "mlp", "--launchers", "spawn"]
    cells = run_request.build(app.parser().parse_args(argv)).cells
    assert {c.launcher for c in cells if c.backend == "ddp-gloo"} == {"spawn"}

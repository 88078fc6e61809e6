"""Version-1 files are upgraded in memory to version 2; the recorded runs still load.

The recorded runs under tests/fixtures/runs are version 1 (written before results/
existed): they load through results with every launcher in the version-2 vocabulary
(their rendering is tests/unit/test_report_fixtures.py, unchanged). Also: each rule of the
launcher upgrade on its own, the note when nothing tells the controller, the other
version-1 fix-ups, and the writers' launcher names. Torch-free.

    python -m pytest tests/unit/test_results_upgrade.py -q
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hvd_vs_ddp import results_schema as results
from hvd_vs_ddp.results_schema.launchers import LAUNCHERS, resolve_legacy
from hvd_vs_ddp.results_schema.upgrade import upgrade_manifest, upgrade_results
from hvd_vs_ddp.run_model.load import load_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
SMALL = FIXTURES / "cpu-small"


def _loaded(run: Path):
    man, notes = results.load_manifest(run)
    out = {}
    for cell in man.cells:
        if cell.status == "passed":
            out[cell.id] = results.load_cell_results(results.results_path(run, cell), cell)
    return man, notes, out


V1_RUNS = sorted(p.name for p in FIXTURES.iterdir()
                 if json.loads((p / "manifest.json").read_text())["format_version"] == 1)


@pytest.mark.parametrize("run", V1_RUNS)
def test_recorded_v1_runs_load_as_version_2(run):
    raw = json.loads((FIXTURES / run / "manifest.json").read_text())
    assert raw["format_version"] == 1
    man, notes, cells = _loaded(FIXTURES / run)
    assert man.format_version == results.FORMAT_VERSION and not notes
    assert [c.id for c in man.cells] == [c["id"] for c in raw["cells"]]
    for res in cells.values():
        assert res.machine.format_version == results.FORMAT_VERSION and not res.notes
        assert res.machine.launcher in LAUNCHERS
        assert all(b.record.launcher in LAUNCHERS for b in res.benchmarks)


def test_recorded_horovod_cells_get_their_controller():
    _, _, cells = _loaded(SMALL)
    for cid, want in (("horovod-horovodrun-gloo-np2", "horovodrun-gloo"),
                      ("horovod-horovodrun-mpi-np2", "horovodrun-mpi")):
        res = cells[cid]
        assert res.machine.launcher == want
        assert {b.record.launcher for b in res.benchmarks} == {want}
        horovod = [b.record for b in res.benchmarks if b.record.backend == "horovod"]
        assert horovod and all(want.endswith(r.backend_meta["controller"]) for r in horovod)
    assert {b.record.launcher for b in cells["ddp-gloo-torchrun-np2"].benchmarks} == {"torchrun"}
    assert {b.record.launcher for b in cells["single-single-np1"].benchmarks} == {"single"}


def test_upgrade_is_in_memory_only(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    _loaded(run)
    load_run(run)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("kwargs, want", [
    ({"controller": "mpi"}, "horovodrun-mpi"),
    ({"controller": "gloo", "cell_launcher": "horovodrun-mpi"}, "horovodrun-gloo"),
    ({"cell_launcher": "horovodrun-mpi"}, "horovodrun-mpi"),
    ({"cell_launcher": "torchrun", "env": {"HOROVOD_CONTROLLER": "gloo"}}, "horovodrun-gloo"),
    ({"env": {"HOROVOD_CONTROLLER": "MPI"}}, "horovodrun-mpi"),
    ({"env": {"HOROVOD_GLOO_RENDEZVOUS_ADDR": "10.0.0.1"}}, "horovodrun-gloo"),
])
def test_horovodrun_takes_the_first_evidence(kwargs, want):
    assert resolve_legacy("horovodrun", **kwargs) == (want, None)


def test_horovodrun_without_evidence_is_kept_with_a_note():
    name, note = resolve_legacy("horovodrun", env={"HOROVOD_CONTROLLER": None})
    assert name == "horovodrun" and "nothing in the file tells" in note
    assert resolve_legacy("local") == ("single", None)
    assert resolve_legacy("torchrun", controller="mpi") == ("torchrun", None)


def _v1_doc(launcher: str, controller: str | None, env: dict) -> dict:
    meta = {"controller": controller} if controller else {}
    return {"machine_info": {"hvd_vs_ddp": {"format_version": 1, "launcher": launcher,
                                            "world_size": 2, "env": env}},
            "benchmarks": [
                {"name": "t", "extra_info": {
                    "kind": "throughput", "backend": "horovod", "world_size": 2,
                    "launcher": launcher, "backend_meta": meta, "workload": "mlp", "knobs": {},
                    "per_rank_batch": 8, "global_batch": 16,
                    "step_times": [[0.1, 0.2], [0.3]], "samples_per_s": [[160.0, 80.0], [53.0]]}},
                {"name": "m", "extra_info": {"kind": "memcpy", "bytes": 64,
                                             "bandwidth_gbps": 1.0}}]}


def test_v1_results_without_evidence_load_with_a_note(tmp_path):
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(_v1_doc("horovodrun", None, {})))
    res = results.load_cell_results(path)
    assert res.machine.launcher == "horovodrun"
    assert [b.record.launcher for b in res.benchmarks] == ["horovodrun", "horovodrun"]
    assert len(res.notes) == 2 and all("kept" in n for n in res.notes)


def test_v1_fix_ups(tmp_path):
    doc = _v1_doc("horovodrun", "mpi", {})
    new, _ = upgrade_results(doc, cell_launcher="horovodrun-gloo")
    assert doc["benchmarks"][0]["extra_info"]["launcher"] == "horovodrun"  # input untouched
    tp, mem = (b["extra_info"] for b in new["benchmarks"])
    assert tp["launcher"] == "horovodrun-mpi"          # backend_meta beats the cell
    assert "launcher" not in mem               # taken from machine_info when loaded
    assert new["machine_info"]["hvd_vs_ddp"]["launcher"] == "horovodrun-gloo"  # the cell
    assert tp["step_times"] == [0.1, 0.2, 0.3] and tp["samples_per_s"] == [160.0, 80.0, 53.0]
    assert mem["backend"] == "memcpy"
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(doc))
    cell = results.CellEntry.pending("c", "horovod", "horovodrun-gloo", 2, ["throughput"])
    res = results.load_cell_results(path, cell)
    assert [b.record.launcher for b in res.benchmarks] == ["horovodrun-mpi", "horovodrun-gloo"]


def test_mpirun_under_a_horovodrun_mpi_cell_becomes_horovodrun_mpi():
    new, notes = upgrade_results(_v1_doc("mpirun", "mpi", {}), cell_launcher="horovodrun-mpi")
    assert new["benchmarks"][0]["extra_info"]["launcher"] == "horovodrun-mpi"
    assert new["machine_info"]["hvd_vs_ddp"]["launcher"] == "horovodrun-mpi" and not notes
    plain, _ = upgrade_results(_v1_doc("mpirun", "mpi", {}), cell_launcher="mpirun")
    assert plain["benchmarks"][0]["extra_info"]["launcher"] == "mpirun"


def test_version_2_is_not_upgraded():
    doc = _v1_doc("horovodrun", "mpi", {})
    doc["machine_info"]["hvd_vs_ddp"]["format_version"] = 2
    assert upgrade_results(doc) == (doc, [])


def test_lenient_v1_manifest_gets_nulls(tmp_path):
    man = {"format": results.FORMAT, "format_version": 1, "cells": [
        {"id": "a", "status": "pending", "backend": "single", "world_size": 1,
         "launcher": "local"}]}
    up, _ = upgrade_manifest(man)
    m = results.Manifest.from_dict(up)
    assert m.hosts is None and m.cells[0].launcher == "single" and m.cells[0].suites == []
    assert m.cells[0].extra == {}


def test_writers_name_horovodrun_by_the_live_environment():
    """Writers record hvd_vs_ddp.backends.env's launcher: already the v2 vocabulary."""
    from hvd_vs_ddp.backends.env import detect

    gloo = {"HOROVOD_RANK": "0", "HOROVOD_SIZE": "2", "HOROVOD_GLOO_RENDEZVOUS_ADDR": "h"}
    mpi = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
           "HOROVOD_HOSTNAME": "h"}
    assert detect(gloo).launcher == "horovodrun-gloo"
    assert detect(mpi).launcher == "horovodrun-mpi"
    for env in (gloo, mpi, {"RANK": "0", "WORLD_SIZE": "2"}, {}):
        assert detect(env).launcher in LAUNCHERS

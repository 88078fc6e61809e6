"""Recovery refusals, up front and in one line: no elastic path (which, and why), min above
max, k of 0, a world of one, a kill step outside the plan, a global batch that a world
size does not divide; through the plan, the suites' options, the matrix and the real CLI.

    python -m pytest tests/unit/test_recovery_plan.py -q
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from hvd_vs_ddp.cli import cell_command, matrix, presets
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.harness.option_parsing import parse_argv
from hvd_vs_ddp.recovery.plan import Plan, default_kill_step, hosts_for, path_for
from tests.launch import ROOT

HVD = dict(path="horovod-elastic", checkpoint="memory", backend="horovod", world_size=2,
           global_batch=96)


@pytest.mark.parametrize("backend, launcher, words", [
    ("ddp-mpi", None, "ddp-mpi has no elastic path (an MPI job ends"),
    ("single", None, "single has no elastic path (one process"),
    ("fsdp", None, "fsdp has no elastic path"),
    ("horovod", "horovodrun-mpi", "horovodrun-mpi has no elastic path (Horovod Elastic "
                                  "needs the Gloo controller"),
    ("ddp-gloo", "mpirun", "mpirun has no elastic path"),
    ("ddp-gloo", "horovodrun-gloo", "ddp-gloo recovers under torchrun"),
])
def test_no_elastic_path_is_refused_naming_why_and_what_exists(backend, launcher, words):
    with pytest.raises(InputError) as err:
        path_for(backend, launcher)
    msg = str(err.value)
    assert words in msg and "\n" not in msg
    if "no elastic path" in msg:
        assert "horovod under horovodrun-gloo" in msg and "under torchrun" in msg


def test_the_elastic_paths():
    assert path_for("horovod").launcher == "horovodrun-gloo"
    assert path_for("ddp-gloo", "torchrun").checkpoints == ("torch-save", "dcp")


@pytest.mark.parametrize("change, words", [
    (dict(commit_every=0), "a commit every 0 steps; k must be >= 1"),
    (dict(min_world=3), "min world 3 must lie in 1..max 2"),
    (dict(world_size=1, global_batch=8), "needs at least 2 ranks"),
    (dict(kill_step=40), "kill step 40 lies outside 1..39"),
    (dict(world_size=3, min_world=3), "below min world 3"),
    (dict(world_size=3, global_batch=100), "does not split evenly over 3 ranks"),
    (dict(checkpoint="dcp"), "horovod-elastic has no checkpoint pattern 'dcp'"),
    (dict(backend="ddp-gloo"), "ddp-gloo recovers under torchrun (torchrun-elastic)"),
])
def test_plan_refusals(change, words):
    with pytest.raises(InputError) as err:
        Plan(**{**HVD, **change}).check()
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_valid_plan_and_its_hosts():
    plan = Plan(**HVD, kill_step=15).check()
    assert plan.hosts() == [("localhost", 1), ("127.0.0.1", 1)]
    assert plan.world_after() == 1  # Horovod drops the failed host
    torchrun = {**HVD, "path": "torchrun-elastic", "checkpoint": "dcp", "backend": "ddp-gloo"}
    # torchrun restarts the group; with --nnodes 1:2 a late agent's host may be left out
    assert Plan(**torchrun).world_after() == 1
    assert Plan(**torchrun, min_world=2).world_after() == 2  # --nnodes 2:2: all rejoin
    assert hosts_for(3) == [("localhost", 2), ("127.0.0.1", 1)]
    assert hosts_for(4) == [("localhost", 2), ("127.0.0.1", 2)]


@pytest.mark.parametrize("steps, k", [(60, 10), (40, 10), (20, 5), (10, 3), (2, 1), (7, 10)])
def test_default_kill_step_lies_inside_the_plan_and_between_commits(steps, k):
    s = default_kill_step(steps, k)
    assert 1 <= s < steps
    if k > 1 and steps > k:
        assert s % k, (steps, k, s)


@pytest.mark.parametrize("argv, words", [
    ("--recovery-commit-every 0", "--recovery-commit-every 0: must be >= 1"),
    ("--recovery-min-world 3", "--recovery-min-world 3 is above --recovery-world-size 2"),
    ("--recovery-world-size 1", "--recovery-world-size 1: must be >= 2"),
    ("--recovery-workload nope", "unknown workload 'nope'"),
])
def test_suite_options_refuse_up_front(argv, words):
    with pytest.raises(InputError) as err:
        parse_argv(argv)
    assert words in str(err.value)


def test_matrix_refuses_and_launches_recovery_cells_in_one_process():
    p = presets.preset("recovery")
    cells = matrix.cells(p)
    assert {(c.backend, c.launcher, c.world_size) for c in cells} == {
        ("horovod", "horovodrun-gloo", 2), ("horovod", "horovodrun-gloo", 3),
        ("ddp-gloo", "torchrun", 2), ("ddp-gloo", "torchrun", 3)}
    assert all(cell_command.launch_as(c) == ("single", 1) and c.id.endswith("-recovery")
               for c in cells)
    argv = cell_command.pytest_argv(cells[1], "plan.json", "out.json")
    assert argv[-2:] == ["--benchmark-json", "out.json"]  # the runner's own, not a user's
    opts = cell_command.cell_options(cells[1], p)
    assert opts.recovery_world_size == cells[1].world_size
    assert opts.recovery_workload == "mlp"
    with pytest.raises(InputError, match="ddp-mpi has no elastic path"):
        matrix.cells(p, ["ddp-mpi"])
    with pytest.raises(InputError, match="needs at least 2 ranks"):
        matrix.cells(p, ["horovod"], [1])
    with pytest.raises(InputError, match="mpirun has no elastic path"):
        matrix.cells(dataclasses.replace(p, launchers=("mpirun",)), ["horovod"])


@pytest.mark.parametrize("args, words", [  # the rest goes the same way (tested above)
    (["--backends", "ddp-mpi"], "backend ddp-mpi has no elastic path"),
    (["--suite-args", "--recovery-min-world 4 --recovery-world-size 3"],
     "--recovery-min-world 4 is above --recovery-world-size 3"),
])
def test_cli_refuses_in_one_line_and_starts_nothing(tmp_path, args, words):
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--preset",
                           "recovery", "--runs-dir", str(tmp_path / "runs"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:") and words in lines[0]
    assert not (tmp_path / "runs").exists()


def test_every_backend_declares_its_elastic_paths_or_why_none():
    """The catalog row says it (hvd_vs_ddp/backends/catalog.py); the paths exist."""
    from hvd_vs_ddp.backends import catalog
    from hvd_vs_ddp.recovery.plan import PATHS, paths_for

    for name in catalog.NAMES:
        row = catalog.get(name)
        assert bool(row.elastic) != bool(row.no_elastic), name
        assert set(row.elastic) <= set(PATHS), name
        assert [p.name for p in paths_for(name)] == list(row.elastic)
    assert PATHS["horovod-elastic"].backends == ("horovod",)
    assert PATHS["torchrun-elastic"].backends == ("ddp-gloo", "ddp-nccl")
    with pytest.raises(InputError, match="unknown backend 'nope'"):
        path_for("nope")

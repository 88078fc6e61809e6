"""A cell's plan (hvd_vs_ddp/harness/cell_plan.py): judged once, by each backend's one
judgement (Backend.judge), written by the runner, read back by the ranks unjudged, and
built the same way by a plain pytest session.

    python -m pytest tests/unit/test_cell_plan.py -q
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.backends.env import LauncherEnv
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.cli import cell_command, matrix, presets
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.harness import cell_plan
from hvd_vs_ddp.harness.options import SuiteOptions
from hvd_vs_ddp.workloads import external
from tests.launch import ROOT

TORCHRUN2 = LauncherEnv("torchrun", 0, 2, 0, 2, 0)


def _alone(value, what):  # one rank's all-gather: its own value
    return [value]


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
def test_every_cell_plan_reads_back_as_written_without_resolving_a_workload(
        preset, tmp_path, monkeypatch):
    p = presets.PRESETS[preset]
    for cell in matrix.cells(p, world_sizes=[1, 2]):
        opts = cell_command.cell_options(cell, p, run_dir=str(tmp_path))
        plan = cell_command.plan(cell, opts, None, 600.0)
        assert plan.cell == cell.id and plan.world_size == cell.world_size
        assert plan.time_limit_s == 600.0 and plan.suites == cell.suites
        file = RunFolder(tmp_path).plan(cell.id)
        assert file == tmp_path / "cells" / f"{cell.id}.plan.json"
        file.parent.mkdir(exist_ok=True)
        cell_plan.write(plan, file, owner=None)

        def refuse(*a, **k):
            raise AssertionError("a rank resolved a workload spec again")
        with monkeypatch.context() as m:  # the rank's side: read, never judged again
            m.setattr(external, "resolve", refuse)
            assert cell_plan.read(file) == plan


def test_a_cells_plan_places_its_ranks_by_the_matrixs_gpu_count(monkeypatch):
    """The plan (cli/cell_command.py) reads the host's GPU count where the matrix does,
    matrix._gpus, at each call: the one count the GPU tests replace reaches the plan too.
    Mutation: cell_command importing `_gpus` by name (a copy the patch never reaches)
    places both ranks on the CPU and fails here."""
    monkeypatch.setattr(matrix, "_gpus", lambda: 2)
    opts = SuiteOptions(backends=("ddp-gloo",), workloads=("mlp",))
    plan = cell_command.plan(Cell("ddp-gloo", "torchrun", 2, ("throughput",)), opts)
    assert [p.ordinal for p in plan.placement] == [0, 1]


def test_the_runner_and_a_plain_session_judge_a_cell_alike():
    """The same code: a cell's plan in the runner, and pytest's session under the same
    launch (torchrun, 2 ranks), give the same verdicts and placement."""
    opts = SuiteOptions(backends=tuple(registry.names()), workloads=("mlp",),
                        knob_set="tune")
    cell = Cell("ddp-gloo", "torchrun", 2, ("throughput",), knob_set="tune")
    runner = cell_command.plan(cell, opts)
    session = cell_plan.for_session(opts, TORCHRUN2, _alone)
    assert (runner.unfit, runner.refusals) == (session.unfit, session.refusals)
    assert [p.local_size for p in runner.placement] == [2, 2]
    assert [(p.rank, p.local_rank) for p in runner.placement] == \
        [(p.rank, p.local_rank) for p in session.placement]


def test_the_plan_says_why_a_backend_cannot_run_each_knob_set():
    """What open_backend and the throughput suite used to judge in every rank: the
    launcher (launch fit), the options (catalog + the backend's own), the compile mode."""
    opts = SuiteOptions(backends=("ddp-gloo", "horovod", "single"), workloads=("mlp",),
                        knob_set="tune")
    plan = cell_plan.build(opts, TORCHRUN2)
    assert plan.why_not("horovod").startswith("torchrun cannot start horovod with 2 ranks")
    assert plan.why_not("single").startswith("runs in one process, but torchrun started 2")
    assert plan.why_not("ddp-gloo") is None
    assert "PowerSGD over Gloo" in plan.refusal("ddp-gloo", "ddp-powersgd1")
    assert plan.refusal("ddp-gloo", "ddp-fp16-hook") is None
    assert plan.refusal("horovod", "default") == plan.why_not("horovod")  # unfit first

    compiled = cell_plan.build(opts.replace(knob_set="compile-all"), None)
    line = compiled.refusal("horovod", "compiled-autograd")
    assert line.startswith("compile mode compiled-autograd refused: compiled autograd "
                           "traces Horovod's gradient hooks")
    assert compiled.refusal("horovod", "default") is None
    assert compiled.compile_modes == ("eager", "inductor", "compiled-autograd")


def test_a_judgement_says_the_same_line_as_its_parts():
    """Backend.judge: installed, then the launch, then the options, then compile."""
    cls = registry.get("ddp-gloo")
    assert cls.judge()
    assert cls.judge(TORCHRUN2, BackendOptions(compression="powersgd")).reason.startswith(
        "PowerSGD over Gloo")
    assert registry.judge("fsdp", None, BackendOptions(bucket_mb=4)).reason == \
        "bucket_mb is DDP's bucket size; FSDP communicates per module"
    assert registry.judge("horovod", TORCHRUN2).reason.startswith("torchrun cannot start")


def test_a_session_agrees_on_every_ranks_verdicts():
    """A backend one rank cannot run is refused on every rank, with that rank's line."""
    opts = SuiteOptions(backends=("ddp-gloo",), workloads=("mlp",))

    def two_ranks(value, what):
        unfit, refusals = value
        return [value, [{**unfit, "ddp-gloo": "rank 1 has no Gloo"}, refusals]]

    plan = cell_plan.for_session(opts, TORCHRUN2, two_ranks)
    assert plan.why_not("ddp-gloo") == "rank 1 has no Gloo"


def test_a_missing_or_foreign_plan_is_one_line(tmp_path):
    with pytest.raises(InputError, match="--cell-plan .*nope.json"):
        cell_plan.read(tmp_path / "nope.json")
    (tmp_path / "x.json").write_text(json.dumps({"format": "hvd-vs-ddp/run"}))
    with pytest.raises(InputError, match="not a cell plan"):
        cell_plan.read(tmp_path / "x.json")


def test_a_recovery_cell_judges_its_elastic_paths_once(monkeypatch):
    """What the recovery suite asked in its process (the path's launcher, package and
    tools) is in the plan of a cell that runs it, and only there."""
    import dataclasses

    from hvd_vs_ddp.recovery import plan as recovery

    opts = SuiteOptions(backends=("ddp-gloo", "horovod"), workloads=("mlp",))
    monkeypatch.setitem(recovery.PATHS, "torchft", dataclasses.replace(
        recovery.PATHS["torchft"], tools=("no-such-lighthouse",)))
    plan = cell_plan.build(opts, None, suites=("recovery",))
    assert plan.path_missing("torchft").startswith("no-such-lighthouse not installed")
    assert plan.path_missing("torchrun-elastic") is None
    assert cell_plan.build(opts, None, suites=("throughput",)).paths == {}


def test_suite_options_beside_a_plan_are_refused_in_one_line():
    from hvd_vs_ddp.harness import option_parsing

    defaults = {kw["dest"]: kw["default"] for _, kw in option_parsing._declarations()}
    cell_plan.refuse_options_beside("p.json", defaults.get)  # nothing given: fine
    given = {**defaults, "rounds": 7, "workloads": "mlp"}
    with pytest.raises(InputError, match=r"--cell-plan p.json: --workloads, --rounds given "
                                         r"too; a cell's plan holds every suite option"):
        cell_plan.refuse_options_beside("p.json", given.get)


def test_a_ranks_pytest_takes_its_options_from_the_plan_and_judges_nothing(tmp_path):
    """A real pytest (its own option parsing and the suites' conftest are the subject):
    with --cell-plan it collects the plan's cells, and a workload the plan names but
    that would not resolve any more is not resolved again (without the plan, the same
    name, given as --workloads, is refused at start-up: test_external_workloads)."""
    good = SuiteOptions(backends=("single",), workloads=("mlp",), rounds=1)
    plan = cell_plan.build(good, None)
    doc = plan.to_dict()
    doc["options"]["workloads"] = ["mlp", "no-such-workload"]  # judged once, as if it were
    file = tmp_path / "p.plan.json"
    file.write_text(json.dumps(doc))
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
           "suites/test_throughput.py::test_throughput"]
    out = subprocess.run([*run, "--cell-plan", str(file)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "test_throughput[single-mlp-default]" in out.stdout
    assert "test_throughput[single-no-such-workload-default]" in out.stdout

"""A cell is judged once in the parent (hvd_vs_ddp/harness/cell_verdict.py): the run
request asks each cell's verdict once, while the matrix lays the run out, builds each
cell's plan from it, and the runner only writes those plans; nothing else in the parent
asks a backend's judgement (Backend.judge through the registry), a launcher's
availability or this torch's compilers.

The request and the runner are the real ones (`run_request.build` from the parsed command
line, `Runner.run` over every repetition); only the launch itself is replaced (our
`launchers.command` refuses, as for a launcher gone since the request), so no process
starts, and the host's GPU count is 0 (matrix._gpus, as tests/unit/test_placement_matrix.py
replaces it). The counters wrap our own functions. Putting the runner's launcher check
back at cell start, or planning a cell again in the runner, fails the first test.

    python -m pytest -p no:cacheprovider tests/unit/test_cell_verdict.py -q
"""
from __future__ import annotations

import contextlib
from collections import Counter

import pytest

from hvd_vs_ddp.backends import compile_support, launchers, registry
from hvd_vs_ddp.cli import app, matrix, presets, run_request
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.runner import Runner
from hvd_vs_ddp.harness import cell_plan, cell_verdict

ARGV = ["run", "--runs-dir", "runs", "--name", "r", "--backends", "ddp-gloo,horovod",
        "--world-sizes", "1,2", "--workloads", "mlp"]


class Judgements:
    """Counts each cell's verdicts, and every judgement asked outside a verdict."""

    def __init__(self, monkeypatch) -> None:
        self.cells: Counter[str] = Counter()
        self.outside: list[str] = []
        self._inside = 0
        for owner, name in ((cell_verdict, "judge_cell"), (cell_verdict, "here")):
            monkeypatch.setattr(owner, name, self._verdict(getattr(owner, name), name))
        for owner, name in ((registry, "judge"), (launchers, "available"),
                            (compile_support, "torch_refusal"),
                            (cell_plan, "judge_backends")):
            monkeypatch.setattr(owner, name, self._part(getattr(owner, name), name))

    def _verdict(self, real, name):
        def counted(*args, **kwargs):
            if name == "judge_cell":
                self.cells[args[0].id] += 1
            self._inside += 1
            try:
                return real(*args, **kwargs)
            finally:
                self._inside -= 1
        return counted

    def _part(self, real, name):
        def counted(*args, **kwargs):
            if not self._inside:
                self.outside.append(f"{name}{args[:1]}")
            return real(*args, **kwargs)
        return counted

    @contextlib.contextmanager
    def none_asked(self, where: str):
        cells, outside = Counter(self.cells), len(self.outside)
        yield
        assert self.cells == cells, f"{where} judged cells again: {self.cells - cells}"
        assert self.outside[outside:] == [], f"{where} judged: {self.outside[outside:]}"


def _no_launch(*args, **kwargs):
    raise launchers.LauncherUnavailable("no launch in a unit test")


def test_the_run_request_judges_each_cell_once_and_the_runner_never(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(matrix, "_gpus", lambda: 0)  # the CPU matrix, on any machine
    judgements = Judgements(monkeypatch)
    req = run_request.build(app.parser().parse_args(ARGV))
    assert judgements.outside == []  # every judgement inside a cell's verdict
    assert set(req.plans) == {c.id for c in req.cells}
    assert {judgements.cells[c.id] for c in req.cells} == {1}, judgements.cells
    assert max(judgements.cells.values()) == 1  # the cells left out too: once each

    monkeypatch.setattr(launchers, "command", _no_launch)
    runner = Runner(req.run_dir, req.preset, list(req.cells), ["hvd-vs-ddp"],
                    req.cell_time_limit, ["mlp"], repeat=2, plans=req.plans)
    with judgements.none_asked("the runner"):
        manifest = runner.run()
    reps = [r for c in manifest.cells for r in c.repeats or []]
    assert len(reps) > len(req.cells)  # later repetitions too
    assert {r.status for r in reps} == {"failed"}
    assert all(r.error.endswith(": no launch in a unit test") for r in reps)
    for cell in req.cells:  # written as the request planned it (repetition 1: all suites)
        stem = cell.id if len(manifest.cell(cell.id).repeats or []) == 1 else f"{cell.id}.r1"
        assert cell_plan.read(runner.folder.plan(stem)) == req.plans[cell.id]


def test_a_resumed_run_judges_each_cell_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(matrix, "_gpus", lambda: 0)
    req = run_request.build(app.parser().parse_args(ARGV))
    req.run_dir.joinpath("cells").mkdir(parents=True)
    Runner(req.run_dir, req.preset, list(req.cells), ["hvd-vs-ddp"], 60, ["mlp"],
           plans=req.plans).save()  # the manifest as the run would leave it
    judgements = Judgements(monkeypatch)
    again = run_request.build(app.parser().parse_args(["run", "--resume", "runs/r"]))
    assert judgements.outside == []
    assert dict(judgements.cells) == {c.id: 1 for c in again.cells}
    assert again.plans == req.plans


def test_a_preset_leaves_out_what_this_machine_lacks_by_the_verdict(monkeypatch):
    """No GPU: ddp-nccl and dp are not a preset's here (left out without a word); asked
    for by name, dp runs and ddp-nccl above one rank is refused, each by its verdict."""
    monkeypatch.setattr(matrix, "_gpus", lambda: 0)
    full = presets.PRESETS["full"]
    judged = matrix.judged(full, world_sizes=[1, 2])
    assert not {c.backend for c, _ in judged} & {"dp", "ddp-nccl"}
    verdict = cell_verdict.judge_cell(Cell("dp", "single", 1, ("throughput",)),
                                      cell_verdict.Here())
    assert verdict and verdict.not_for_preset.startswith("dp without GPUs")
    assert [c.id for c in matrix.cells(full, ["dp"], [1])][0] == "dp-single-np1"
    with pytest.raises(matrix.MatrixError, match="ddp-nccl at world size 2 needs 2 GPUs"):
        matrix.cells(full, ["ddp-nccl"], [2])

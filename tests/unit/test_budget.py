"""`run --budget`'s loop (hvd_vs_ddp/cli/budget.py) on REAL recorded repetitions.

tests/fixtures/runs/cpu-repeats (6 repetitions per cell, recorded as
tests/unit/test_calibration.py says) is cut back to its first 3 repetitions; the
budget then "runs" a repetition by restoring the recorded one (cells/<id>.r<k>.json),
on a clock that advances 20 s per repetition. No process starts: what is tested is
the loop's choice and bookkeeping (only open pairs' lagging cells get repetitions, the
budget and max_reps stop it, the plan records verdicts, repetitions and open pairs,
a failed added repetition is dropped and its cell gets no more). The real launches are
the quick preset's (docs/methodology.md, "Settling within a budget").

    python -m pytest tests/unit/test_budget.py -q
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hvd_vs_ddp.cli import budget
from hvd_vs_ddp.cli.runner import _aggregate
from hvd_vs_ddp.results_schema import load_manifest
from hvd_vs_ddp.run_model import stats

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-repeats"
STEP_S = 20.0


class _Cell:
    def __init__(self, id: str) -> None:
        self.id = id


class Replay:
    """The runner's surface the budget uses; a repetition restores the recorded one."""
    aggregate = staticmethod(_aggregate)

    def __init__(self, run_dir: Path, minutes: float, fail: str | None = None) -> None:
        self.run_dir, self.fail, self.clock, self.ran = run_dir, fail, 0.0, []
        self.manifest, _ = load_manifest(run_dir)
        for e in self.manifest.cells:
            e.repeats = e.repeats[:3]
            _aggregate(e)
        self.manifest.repeat, self.manifest.order = 3, [
            o for o in self.manifest.order if int(o.rsplit(".r", 1)[1]) <= 3]
        self.manifest.budget = budget.new_plan(minutes, 3)
        self.cells = [_Cell(e.id) for e in self.manifest.cells]
        self.save()

    def elapsed(self) -> float:
        return self.clock

    def save(self) -> None:
        self.manifest.check()
        (self.run_dir / "manifest.json").write_text(json.dumps(self.manifest.to_dict()))

    def _run_cell(self, cell, entry, rep) -> None:
        self.clock += STEP_S
        self.ran.append(f"{entry.id}.r{rep.rep}")
        if entry.id == self.fail:
            rep.status, rep.error, rep.seconds = "failed", f"{entry.id}: broke", STEP_S
            return
        src = 4 + (rep.rep - 4) % 3  # recorded repetitions 4..6, again and again
        rep.status, rep.seconds, rep.returncode = "passed", STEP_S, 0
        rep.results = f"cells/{entry.id}.r{src}.json"
        rep.log = f"logs/{entry.id}.r{src}.log"


@pytest.fixture()
def run_dir(tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(RUN, dst)
    return dst


def test_only_open_pairs_lagging_cells_get_repetitions(run_dir):
    r = Replay(run_dir, minutes=2.0)  # 6 repetitions' worth of the fake clock
    before = {p["pair"]: p for p in budget._state(budget.judge(run_dir, r.manifest.budget),
                                                  r.manifest.budget)}
    budget.settle(r, stream=open("/dev/null", "w"))
    plan = r.manifest.budget
    assert r.ran, "nothing ran: every pair settled at 3 repetitions?"
    open_cells = {c for p in before.values() if p["open"] for c in p["cells"]}
    assert {x.rsplit(".r", 1)[0] for x in r.ran} <= open_cells
    assert len(r.ran) <= 6 and plan["stopped"] in ("budget spent", "every pair settled")
    assert {p["pair"] for p in plan["pairs"]} == set(before)
    assert plan["open"] == [p["pair"] for p in plan["pairs"] if p["open"]]
    # the plan's verdicts are what the report's code says of the final state
    final = budget.judge(run_dir, plan)
    for (_, row), p in zip(final.iterrows(), plan["pairs"]):
        assert row["judged"].verdict == p["verdict"]
        assert row["judged"].ci.look == stats.look_of(p["repetitions"], 3)


def test_max_reps_stops_a_pair(run_dir):
    r = Replay(run_dir, minutes=60.0)
    r.manifest.budget["max_reps"] = 4
    budget.settle(r, stream=open("/dev/null", "w"))
    assert max(len(e.repeats) for e in r.manifest.cells) <= 4
    plan = r.manifest.budget
    assert plan["stopped"] in ("every pair settled", "max_reps (4) reached"), plan["stopped"]


def test_a_failed_extra_repetition_is_dropped(run_dir):
    r = Replay(run_dir, minutes=60.0, fail="ddp-gloo-torchrun-np2")
    r.manifest.budget["max_reps"] = 5
    budget.settle(r, stream=open("/dev/null", "w"))
    e = r.manifest.cell("ddp-gloo-torchrun-np2")
    failed = r.manifest.budget["failed"]
    if "ddp-gloo-torchrun-np2.r4" in r.ran:
        assert [f["cell"] for f in failed] == ["ddp-gloo-torchrun-np2"]
        assert len(e.repeats) == 3 and e.status == "passed"
        assert r.ran.count("ddp-gloo-torchrun-np2.r4") == 1
        assert "a cell's added repetition failed" in r.manifest.budget["stopped"]


def test_budget_needs_two_repetitions():
    with pytest.raises(ValueError, match="--repeat 2 or more"):
        budget.new_plan(8, 1)


def test_bad_budget_is_one_line_and_exit_2(tmp_path, capsys):
    from hvd_vs_ddp.cli import main as cli

    with pytest.raises(SystemExit) as stop:  # argparse's one line
        cli(["run", "--preset", "quick", "--budget", "0"])
    assert stop.value.code == 2
    assert "--budget: '0': expected a number of minutes > 0" in capsys.readouterr().err
    runs = tmp_path / "runs"
    assert cli(["run", "--preset", "quick", "--budget", "8", "--repeat", "1",
                "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("hvd-vs-ddp: error: --budget 8 needs --repeat 2 or more (with one "
                       "repetition the interval is within-run only and no look is valid)")
    assert not runs.exists()

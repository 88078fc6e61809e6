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
    """The runner's surface the budget uses; a repetition restores a recorded one.

    A new run is cut back to its first `planned` repetitions; resume=True takes the run
    as the last session left it (its manifest, its clock at the plan's spent_s)."""
    aggregate = staticmethod(_aggregate)

    def __init__(self, run_dir: Path, minutes: float, fail: str | None = None,
                 planned: int = 3, resume: bool = False) -> None:
        self.run_dir, self.fail, self.clock, self.ran = run_dir, fail, 0.0, []
        self.planned = planned
        self.manifest, _ = load_manifest(run_dir)
        self.recorded = {e.id: len(list((run_dir / "cells").glob(f"{e.id}.r*.json")))
                         for e in self.manifest.cells}
        if resume:
            self.manifest.budget["minutes"] = float(minutes)
            self.clock = float(self.manifest.budget["spent_s"])
        else:
            for e in self.manifest.cells:
                e.repeats = e.repeats[:planned]
                _aggregate(e)
            self.manifest.repeat, self.manifest.order = planned, [
                o for o in self.manifest.order if int(o.rsplit(".r", 1)[1]) <= planned]
            self.manifest.budget = budget.new_plan(minutes, planned)
        self.cells = [_Cell(e.id) for e in self.manifest.cells]
        self.save()

    def elapsed(self) -> float:
        return self.clock

    def save(self) -> None:
        if self.manifest.budget is not None:
            self.manifest.budget["spent_s"] = self.clock
        self.manifest.check()
        (self.run_dir / "manifest.json").write_text(json.dumps(self.manifest.to_dict()))

    def _run_cell(self, cell, entry, rep) -> None:
        self.clock += STEP_S
        self.ran.append(f"{entry.id}.r{rep.rep}")
        if entry.id == self.fail:
            rep.status, rep.error, rep.seconds = "failed", f"{entry.id}: broke", STEP_S
            return
        n, p = self.recorded[entry.id], self.planned  # cpu-repeats: 4..6, again and again
        src = p + 1 + (rep.rep - p - 1) % (n - p) if n > p else 1 + (rep.rep - 1) % n
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
    assert len(r.ran) <= 6 and ("budget spent" in plan["stopped"]
                                or plan["stopped"] == "every pair settled"), plan["stopped"]
    assert {p["pair"] for p in plan["pairs"]} == set(before)
    assert plan["open"] == [p["pair"] for p in plan["pairs"] if p["open"]]
    # the plan's verdicts are what the report's code says of the final state
    final = budget.judge(run_dir, plan)
    assert [j.name for j in final] == [p["pair"] for p in plan["pairs"]]
    for j, p in zip(final, plan["pairs"]):
        assert j.verdict == p["verdict"] and j.kind == p["kind"] == "throughput"
        assert j.ci.look == stats.look_of(p["repetitions"], 3)


def test_max_reps_stops_a_pair(run_dir):
    r = Replay(run_dir, minutes=60.0)
    r.manifest.budget["max_reps"] = 4
    budget.settle(r, stream=open("/dev/null", "w"))
    assert max(len(e.repeats) for e in r.manifest.cells) <= 4
    plan = r.manifest.budget
    assert any(why in plan["stopped"] for why in (
        "every pair settled", "max_reps (4) reached",
        "the open pairs left cannot settle by their cap (given up)")), plan["stopped"]
    if "given up" in plan["stopped"]:  # one look left: what cannot settle is named
        assert plan["given_up"] and all(g["chance"] < budget.GIVE_UP
                                        for g in plan["given_up"])


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


# -- every pair the report judges ---------------------------------------------------
FIXTURES = RUN.parent


def _copy(tmp_path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


@pytest.mark.parametrize("fixture, kind", [("cpu-compile", "compile"),
                                           ("cpu-tune", "tuning"),
                                           ("cpu-recovery", "recovery")])
def test_the_chooser_takes_a_compile_tuning_or_recovery_pair(tmp_path, fixture, kind):
    """Judged by the report's code at the first look of a budget (planned 2); with one
    pair of the kind the only open one, the chooser gives ITS lagging cells a
    repetition. (The recorded recovery pairs are all firm, so "open" is set here.)"""
    from dataclasses import replace

    r = Replay(_copy(tmp_path, fixture), minutes=60.0, planned=2)
    plan = r.manifest.budget
    pairs = budget.judge(r.run_dir, plan)
    mine = [p for p in pairs if p.kind == kind]
    assert mine and len({p.name for p in pairs}) == len(pairs)
    assert all(p.ci.look == 1 and p.ci.level == pytest.approx(1 - plan["alpha"] / 2)
               for p in pairs)  # the sequential interval, recovery's too
    for target in mine:
        only = [replace(p, verdict="inconclusive" if p is target else "faster")
                for p in pairs]
        pick, why = budget.choose(only, r.manifest, plan, 3600.0, set())
        assert pick is not None, why
        chance, name, lag = pick
        assert name == target.name and 0 <= chance <= 1
        assert lag and {e.id for e in lag} <= set(target.all_cells)
    closed = [replace(p, verdict="faster") for p in pairs]
    assert budget.choose(closed, r.manifest, plan, 3600.0, set()) == (None, "")


def test_compile_pairs_are_settled_and_resume_goes_on(tmp_path):
    """The loop itself on the recorded compile run: its first choice is the answer's pair
    (best Horovod against best DDP), the plan and the report's budget line name every
    kind, and a resumed run goes on from the plan with the time left."""
    import io

    from hvd_vs_ddp.reports.budget_text import budget_lines
    from hvd_vs_ddp.run_model.load import load_run

    out = io.StringIO()
    r = Replay(_copy(tmp_path, "cpu-compile"), minutes=1.0, planned=2)
    budget.settle(r, stream=out)
    first = [ln for ln in out.getvalue().splitlines() if ln.startswith("budget: next")]
    plan = r.manifest.budget
    headline = [p["pair"] for p in plan["pairs"] if p["headline"]]
    assert first and any(first[0].startswith(f"budget: next {h} (") for h in headline), \
        out.getvalue()
    assert "budget spent" in plan["stopped"] and 2 <= len(r.ran) <= 3
    assert {p["kind"] for p in plan["pairs"]} == {"throughput", "compile"}
    assert "(compile, throughput)" in out.getvalue()  # progress: the open kinds
    line = budget_lines([load_run(r.run_dir)])[0]
    for p in plan["pairs"]:
        assert f"{p['pair']}: {p['verdict']} after {p['repetitions']}" in line
        assert (p["pair"] in line.split("Left open", 1)[-1]) == p["open"]
    done = {e.id: len(e.repeats) for e in r.manifest.cells}

    again = Replay(r.run_dir, minutes=2.0, planned=2, resume=True)  # run --resume
    assert again.clock == pytest.approx(r.clock)  # the plan's spent_s
    budget.settle(again, stream=io.StringIO())
    assert again.ran and again.clock <= 120.0
    for e in again.manifest.cells:  # nothing redone, repetitions numbered on
        assert len(e.repeats) >= done[e.id]
        assert [x.rep for x in e.repeats] == list(range(1, len(e.repeats) + 1))
    assert again.ran[0].rsplit(".r", 1)[1] != "1"
    final = budget.judge(again.run_dir, again.manifest.budget)
    assert [(j.name, j.verdict) for j in final] == [
        (p["pair"], p["verdict"]) for p in again.manifest.budget["pairs"]]


def _said(text: str) -> list[tuple[str, str]]:
    """('next' | 'given up', pair) in the order the budget's progress lines said them."""
    import re
    out = []
    for ln in text.splitlines():
        m = re.match(r"budget: (next|given up on) (.+?) \(chance", ln)
        if m:
            out.append(("next" if m.group(1) == "next" else "given up", m.group(2)))
    return out


def test_the_answers_pairs_get_repetitions_first(run_dir):
    import io

    out = io.StringIO()
    r = Replay(run_dir, minutes=3.0)
    budget.settle(r, stream=out)
    plan = r.manifest.budget
    headline = {p["pair"] for p in plan["pairs"] if p["headline"]}
    assert headline, "the answer's pairs are marked"
    said = [pair for what, pair in _said(out.getvalue()) if what == "next"]
    assert said, out.getvalue()
    # a pair that is not the answer's gets a repetition only once no answer's pair is
    # open and still worth one
    first_other = next((i for i, p in enumerate(said) if p not in headline), len(said))
    assert all(p in headline for p in said[:first_other])
    if first_other < len(said):
        given = {g["pair"] for g in plan["given_up"]}
        state = {p["pair"]: p for p in budget._state(budget.judge(run_dir, plan), plan)}
        assert all(not state[h]["open"] or h in given for h in headline
                   if h in state), (said, plan["given_up"])


def test_a_pair_given_up_never_gets_another_repetition(run_dir, monkeypatch):
    """A pair whose chance to settle by its cap is below GIVE_UP is given up at once,
    named, and never chosen again (the mutation: choose() that ignores the plan's
    given_up list makes this fail)."""
    import io

    monkeypatch.setattr(budget, "GIVE_UP", 0.6)  # give some up, keep others going
    out = io.StringIO()
    r = Replay(run_dir, minutes=4.0)
    budget.settle(r, stream=out)
    said = _said(out.getvalue())
    given = [pair for what, pair in said if what == "given up"]
    assert given, f"nothing given up at GIVE_UP 0.6: {out.getvalue()}"
    for pair in given:
        after = said[said.index(("given up", pair)) + 1:]
        assert ("next", pair) not in after, f"{pair} got a repetition after it was given up"
    plan = r.manifest.budget
    assert [g["pair"] for g in plan["given_up"]] == given
    assert all(p["given_up"] == (p["pair"] in given) for p in plan["pairs"])
    from hvd_vs_ddp.reports.budget_text import budget_lines
    from hvd_vs_ddp.run_model.load import load_run
    line = budget_lines([load_run(r.run_dir)])[0]  # the report names them as such
    assert all(g in line.split("Given up at once", 1)[1] for g in given)


def test_a_pair_that_cannot_settle_by_its_cap_has_a_negligible_chance():
    plan = budget.new_plan(10, 3)
    wide_at_edge = stats.RatioCI(1.05, 0.6, 1.8, 3, 0.95, look=1)  # on the margin's edge
    far = stats.RatioCI(1.6, 1.3, 1.95, 3, 0.95, look=1)           # far beyond it
    assert budget.cap_chance(wide_at_edge, plan) < budget.GIVE_UP
    assert budget.cap_chance(far, plan) > 0.5
    done = stats.RatioCI(1.6, 1.3, 1.95, plan["max_reps"], 0.95, look=7)
    assert budget.cap_chance(done, plan) == 0.0  # at its cap: nothing more to come


def _mirrored(plan, step: float, reps: int = 2) -> tuple[stats.RatioCI, stats.RatioCI]:
    """Two pairs `step` (log ratio) either side of the upper margin edge, alike in width."""
    import math

    edge = math.log(1 + plan["margin"])
    half = 0.03  # a 2-repetition interval about 6% wide, as at a link-bound rate here

    def at(x):
        return stats.RatioCI(math.exp(x), math.exp(x - half), math.exp(x + half), reps,
                             0.975, look=1)
    return at(edge - step), at(edge + step)


def test_a_pair_may_settle_on_either_side_of_the_margin_edge():
    """The estimate moves either way, so a pair on the edge settles as often across it as
    on its own side: the chances count both. Counting one side gave up links6's resnet50
    pair at 500mbit (0.952 [0.922-0.980], 2 repetitions: 2.7%, half of its 5.3%) with
    time left (the mutation: either_side without its second term fails here)."""
    import random
    import statistics

    plan = budget.new_plan(13, 2)
    for step in (0.0, 0.004, 0.02):
        below, above = _mirrored(plan, step)
        assert budget.cap_chance(below, plan) == pytest.approx(budget.cap_chance(above, plan))
        assert budget.settle_chance(below, plan) == pytest.approx(
            budget.settle_chance(above, plan))
    on_edge, _ = _mirrored(plan, 0.0)
    assert budget.cap_chance(on_edge, plan) >= budget.GIVE_UP  # kept, not given up
    links6 = stats.RatioCI(0.9524, 0.9219, 0.9799, 2, 0.975, look=1)
    assert budget.cap_chance(links6, plan) >= budget.GIVE_UP
    # either_side against a simulation of the final estimate
    rng = random.Random(7)
    for d, needed, drift in ((0.0, 0.02, 0.01), (0.01, 0.02, 0.01), (0.05, 0.02, 0.03)):
        ends = [d + rng.gauss(0, drift) for _ in range(40000)]
        hit = sum(abs(e) >= needed for e in ends) / len(ends)
        assert budget.either_side(d, needed, drift) == pytest.approx(hit, abs=0.01)
    assert budget.either_side(0.0, 0.02, 0.01) == pytest.approx(
        2 * statistics.NormalDist().cdf(-2.0))

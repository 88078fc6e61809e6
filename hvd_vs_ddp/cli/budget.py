"""`hvd-vs-ddp run --budget MINUTES`: settle the verdicts within a time budget.

After the planned repetitions (`--repeat`, at least 2) the runner judges every pair the
report judges (hvd_vs_ddp/run_model/judged.py: Horovod vs DDP throughput, a library
compiled vs eager, best Horovod vs best DDP over knob sets, time to recover after a
kill), with the run model's judgement that the report renders (the budget imports nothing
from hvd_vs_ddp/reports/), disturbed repetitions left out as there, and, while
some pair is inconclusive and time is left, adds one interleaved repetition to the
cells of ONE open pair, whatever its kind: the pair whose next repetition is most
likely to settle it, per second it costs (`choose`). Only the pair's lagging
cells run (a cell shared with another pair may be ahead), in a shuffled order. A pair
stops getting repetitions once its verdict is firm or it reached `max_reps`
(3 x planned). The budget is wall-clock time for the whole run, planned repetitions
included; a repetition starts only when its expected time (the cell's mean so far) fits
in what is left.

The looks are valid under repetition: every interval of a budgeted run, here and in
the report, is hvd_vs_ddp/run_model/stats.py's `sequential_ci` (the error spent over
looks; docs/methodology.md has the rule, its citation and the simulation). The plan and
its state live in the manifest's `budget` (planned, max_reps, alpha, margin, spent_s,
pairs with verdict and repetitions, open), so `run --resume RUN_DIR` finishes the
planned repetitions and goes on settling with the time left (`--budget M` on resume
sets a new total). An added repetition that fails is dropped from the cell (its log
stays) and the cell gets no more; the plan lists it under `failed`.

Every kind alike: a pair's arms are the cells whose repetitions feed it (recovery: one
trial per repetition of the Horovod Elastic cell and of the torch-side cell, which runs
every torch-side path, so one added repetition feeds each of that world size's
recovery pairs); tuning's best of each side is picked anew at each look, so the cells
that get a repetition are the current best's. The progress line names the open pairs
and their kinds; the report's budget line ("repetitions per verdict", "left open")
lists every kind by the same names (compile:, tuning:, recovery: before the pair).

The choice (a heuristic, documented here): with the pair's interval half-width h at
level 1-alpha_k over n repetitions (s = h/z_k), one more repetition gives about
h' = z_{k+1} s sqrt(n/(n+1)); the estimate's distance d from the nearer margin edge moves
by about sigma = s/sqrt(n+1); the chance to settle, on its own side of the edge or across
it, is Phi((d - h') / sigma) + Phi((-d - h') / sigma).

The answer's pairs first: the pairs the report's answer rests on (per case
and world size the best Horovod against the best DDP, and each tuning best-vs-best:
run_model/judged.py `headline`) get repetitions before any other open pair. A pair whose
chance to settle by its cap is negligible (`cap_chance` < GIVE_UP: the estimate at
max_reps repetitions, drifting by what the remaining repetitions can move it, still
inside z_N x its final standard error of a margin edge) is given up at once, named in the
plan's `given_up` and the progress line, and never gets another repetition (on resume
either); the time goes to pairs that can settle.

    hvd-vs-ddp run --preset quick --budget 8           # settle within 8 minutes in all
    hvd-vs-ddp run --resume runs/<name>                # go on with the time left
"""
from __future__ import annotations

import math
import random
import statistics
import sys
from typing import TYPE_CHECKING, Any

from hvd_vs_ddp.results_schema import Repetition
from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN

if TYPE_CHECKING:  # the run model's judgement (pandas) loads only when a budget judges
    from hvd_vs_ddp.run_model.judged import Judged

RULE = ("Bonferroni alpha spending over looks: alpha/2 at the planned repetitions, "
        "alpha/(2(K-1)) at each later look, K = max_reps - planned + 1")
MAX_FACTOR = 3  # max_reps = 3 x planned
GIVE_UP = 0.05  # a pair with less chance than this to settle by its cap is given up


def new_plan(minutes: float, planned: int, margin: float = DEFAULT_MARGIN) -> dict[str, Any]:
    if planned < 2:
        raise ValueError("--budget needs --repeat 2 or more: with one repetition the "
                         "interval is within-run only and no look is valid")
    return {"minutes": float(minutes), "planned": int(planned),
            "max_reps": MAX_FACTOR * int(planned), "alpha": round(1 - stats.LEVEL, 6),
            "margin": float(margin), "rule": RULE, "spent_s": 0.0, "pairs": [],
            "open": [], "failed": [], "given_up": [], "stopped": None}


def judge(run_dir, plan: dict[str, Any]) -> list[Judged]:
    """Every pair the run is judged on (hvd_vs_ddp/run_model/judged.py: throughput, compile
    axis, tuning best vs best, recovery), judged by the run model, the same code whose
    verdicts the report renders, with the plan's margin, disturbed repetitions left out as
    the report leaves them; [] if unreadable."""
    from hvd_vs_ddp.results_schema.errors import ResultsError
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.judged import judged_pairs
    try:
        run = load_judged_run(run_dir)
    except ResultsError:
        return []
    return judged_pairs(build_frames([run]), plan["margin"])


def settle_chance(ci: stats.RatioCI, plan: dict[str, Any]) -> float:
    """The chance one more repetition per side settles the pair (see the docstring)."""
    looks = stats.max_looks(plan["planned"], plan["max_reps"])
    k, n = ci.look or 1, ci.reps
    if k >= looks or ci.lo <= 0 or ci.hi <= ci.lo:
        return 0.0
    nd = statistics.NormalDist()
    s = _log_se(ci)
    z_next = nd.inv_cdf(1 - stats.spent_alpha(k + 1, looks, plan["alpha"]) / 2)
    h_next = z_next * s * math.sqrt(n / (n + 1))
    return either_side(_edge_distance(ci, plan), h_next, s / math.sqrt(n + 1))


def _log_se(ci: stats.RatioCI) -> float:
    """The standard error of the log ratio its interval implies (half-width over z)."""
    z = statistics.NormalDist().inv_cdf(1 - (1 - ci.level) / 2)
    return (math.log(ci.hi) - math.log(ci.lo)) / (2 * z)


def _edge_distance(ci: stats.RatioCI, plan: dict[str, Any]) -> float:
    """The estimate's distance from the nearer margin edge, in log ratio."""
    return abs(abs(math.log(ci.ratio)) - math.log(1 + plan["margin"]))


def either_side(d: float, needed: float, drift: float) -> float:
    """The chance an estimate d from a margin edge, moving by N(0, drift^2), ends at
    least `needed` beyond the edge on either side: on its own side (d - needed left to
    go) or across the edge (d + needed). Near the edge the second is as likely as the
    first: counting one side only gave up a pair exactly on the edge at half its chance."""
    nd = statistics.NormalDist()
    return nd.cdf((d - needed) / drift) + nd.cdf((-d - needed) / drift)


def cap_chance(ci: stats.RatioCI, plan: dict[str, Any]) -> float:
    """The chance the pair settles by its cap (max_reps repetitions per side): the
    estimate at N = max_reps moves from today's by about sqrt(se_n^2 - se_N^2) (se_N =
    se_n sqrt(n/N)) and must end at least z_N se_N (the last look's level) beyond the
    nearer margin edge, on either side of it (`either_side`)."""
    looks = stats.max_looks(plan["planned"], plan["max_reps"])
    k, n, cap = ci.look or 1, ci.reps, int(plan["max_reps"])
    if n >= cap or k >= looks or ci.lo <= 0 or ci.hi <= ci.lo:
        return 0.0
    nd = statistics.NormalDist()
    se_n = _log_se(ci)
    se_cap = se_n * math.sqrt(n / cap)
    z_cap = nd.inv_cdf(1 - stats.spent_alpha(looks, looks, plan["alpha"]) / 2)
    drift = math.sqrt(max(se_n ** 2 - se_cap ** 2, 1e-12))
    return either_side(_edge_distance(ci, plan), z_cap * se_cap, drift)


def _give_up(p: Judged, plan: dict[str, Any]) -> bool:
    """Whether `p` is given up (now or at an earlier look): recorded in the plan once."""
    given = plan.setdefault("given_up", [])
    if any(g["pair"] == p.name for g in given):
        return True
    chance = cap_chance(p.ci, plan)
    if chance >= GIVE_UP:
        return False
    given.append({"pair": p.name, "kind": p.kind, "chance": round(chance, 4),
                  "repetitions": int(p.ci.reps), "verdict": p.verdict,
                  "ratio": [p.ci.ratio, p.ci.lo, p.ci.hi], "headline": p.headline})
    return True


def _passed(entry) -> list[Repetition]:
    return [r for r in entry.repeats or [] if r.status == "passed"]


def _seconds(entry) -> float:
    later = [r.seconds for r in _passed(entry)[1:] if r.seconds]  # timing suites only
    first = [r.seconds for r in _passed(entry)[:1] if r.seconds]
    return statistics.mean(later or first or [60.0])


def _state(pairs: list[Judged], plan: dict[str, Any]) -> list[dict[str, Any]]:
    given = {g["pair"] for g in plan.get("given_up") or []}
    return [{"pair": p.name, "kind": p.kind, "verdict": p.verdict,
             "repetitions": int(p.ci.reps), "look": p.ci.look, "cells": p.all_cells,
             "open": p.open, "headline": p.headline, "given_up": p.name in given}
            for p in pairs]


def choose(pairs: list[Judged], manifest, plan: dict[str, Any], left: float,
           stuck: set[str]) -> tuple[tuple[float, str, list] | None, str]:
    """The open pair whose next repetition has the best chance to settle it per second,
    of every kind alike, the answer's pairs (`headline`) before any other, a pair given up
    never (`_give_up`, recorded in the plan): (chance, pair name, its lagging cell
    entries), or None and why no pair can have one."""
    options, why = [], set()
    for p in pairs:
        if not p.open:
            continue
        if _give_up(p, plan):
            why.add("the open pairs left cannot settle by their cap (given up)")
            continue
        if set(p.all_cells) & stuck:
            why.add("a cell's added repetition failed")
            continue
        entries = [manifest.cell(c) for c in p.all_cells]
        counts = [len(_passed(e)) for e in entries]
        if min(counts) >= plan["max_reps"]:
            why.add(f"max_reps ({plan['max_reps']}) reached")
            continue
        lag = [e for e, c in zip(entries, counts) if c == min(counts)]
        cost = sum(_seconds(e) for e in lag)
        if cost > left:
            why.add("budget spent")
            continue
        chance = settle_chance(p.ci, plan)
        options.append((p.headline, chance / cost, chance, p.name, lag))
    if not options:
        return None, "; ".join(sorted(why))
    _, _, chance, name, lag = max(options, key=lambda o: (o[0], o[1]))
    return (chance, name, lag), ""


def settle(runner, progress=None, stream=None) -> None:
    """Add repetitions to open pairs until all settle, max_reps, or the budget is spent."""
    stream = stream or sys.stderr
    m, plan = runner.manifest, runner.manifest.budget
    rng = random.Random(m.order_seed)
    stuck: set[str] = {f["cell"] for f in plan.get("failed") or []}
    while True:
        pairs = judge(runner.run_dir, plan)
        plan["pairs"] = _state(pairs, plan)
        plan["open"] = [p.name for p in pairs if p.open]
        left = plan["minutes"] * 60 - runner.elapsed()
        runner.save()
        kinds = sorted({p.kind for p in pairs if p.open})
        print(f"budget: {len(pairs) - len(plan['open'])} of {len(pairs)} pair(s) settled; "
              f"open: {', '.join(plan['open']) or 'none'}"
              + (f" ({', '.join(kinds)})" if kinds else "")
              + f"; {max(left, 0) / 60:.1f} min left", file=stream, flush=True)
        if not plan["open"]:
            plan["stopped"] = "every pair settled" if pairs else "no pair to judge"
            break
        known = len(plan.get("given_up") or [])
        pick, why = choose(pairs, m, plan, left, stuck)
        for g in (plan.get("given_up") or [])[known:]:
            print(f"budget: given up on {g['pair']} (chance to settle by {plan['max_reps']} "
                  f"repetitions: {g['chance']:.1%})", file=stream, flush=True)
        plan["pairs"] = _state(pairs, plan)  # with what this look gave up
        if pick is None:
            plan["stopped"] = why
            break
        chance, name, lag = pick
        rng.shuffle(lag)
        print(f"budget: next {name} (chance to settle {chance:.0%}): "
              f"{', '.join(e.id for e in lag)}", file=stream, flush=True)
        for entry in lag:
            _add_repetition(runner, entry, stuck, progress)
    runner.save()


def _add_repetition(runner, entry, stuck: set[str], progress) -> None:
    m, plan = runner.manifest, runner.manifest.budget
    rep = Repetition(rep=len(entry.repeats or []) + 1)
    entry.repeats = [*(entry.repeats or []), rep]
    m.order = [*(m.order or []), f"{entry.id}.r{rep.rep}"]
    cell = next(c for c in runner.cells if c.id == entry.id)
    label = f"{entry.id}.r{rep.rep} (budget)"
    if progress:
        progress.start(0, 1, label)
    runner._run_cell(cell, entry, rep)
    if rep.status != "passed":  # never let an extra repetition fail the whole cell
        plan["failed"] = [*(plan.get("failed") or []),
                          {"cell": entry.id, "rep": rep.rep, "error": rep.error,
                           "log": rep.log}]
        entry.repeats = entry.repeats[:-1]
        m.order = m.order[:-1]
        stuck.add(entry.id)
    runner.aggregate(entry)
    runner.save()
    if progress:
        progress.done(label, rep)

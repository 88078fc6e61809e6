"""Verdicts with a practical margin: the wording of every Horovod/DDP answer, in one place.

A ratio r = horovod/ddp samples per second (> 1: Horovod faster) with its interval
[lo, hi] (hvd_vs_ddp.run_model.stats: two-level bootstrap) and a margin m (default 5%,
`hvd-vs-ddp report --margin`) gives one of three verdicts:

- "faster":       the interval lies beyond the margin band, lo > 1+m or hi < 1/(1+m):
                  "horovod (mpi) is 12% faster than ddp-gloo [1.08-1.15]".
- "equivalent":   the interval lies inside the band [1/(1+m), 1+m]:
                  "equivalent within ±5%".
- "inconclusive": anything else, with an estimate of the repetitions that would settle
                  it (the interval's width shrinks like 1/sqrt(repetitions)).

In a run with a budget (`hvd-vs-ddp run --budget`, the plan in its manifest) every
pair's interval is the sequential one at the pair's look (`interval(...)`,
hvd_vs_ddp.run_model.stats.sequential_ci: the error spent over looks), and the verdict
says after how many repetitions it was reached.

With a single repetition the interval is within-run only (it ignores run-to-run
variation), so every verdict is marked "indicative". At world size 1 nothing is
communicated: the comparison is labelled "framework overhead without communication"
and worded as a difference in samples/s ("ran 4% more samples/s than"), never a win.

    from hvd_vs_ddp.run_model.verdicts import judge, DEFAULT_MARGIN
    v = judge(ci, margin=0.05, world_size=2, a="horovod (mpi)", b="ddp-gloo")
    v.verdict, v.text()          # "faster", "horovod (mpi) is 12% faster than ddp-gloo ..."
    python -m hvd_vs_ddp.run_model.verdicts 1.08 1.06 1.10 3     # ratio lo hi repetitions
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from hvd_vs_ddp.run_model.margin import (  # noqa: F401 (the words, shared with the projection)
    DEFAULT_MARGIN,
    EQUIVALENT,
    FASTER,
    INCONCLUSIVE,
    VERDICTS,
    band,
    check_margin,
    classify,
    smallest_faster,
)
from hvd_vs_ddp.run_model.stats import LEVEL, RatioCI, Shifts, ratio_ci, sequential_ci

OVERHEAD = "framework overhead without communication"
MAX_REPS = 100  # beyond this the estimate says "more than 100"


def reps_needed(ci: RatioCI, m: float) -> int | None:
    """Repetitions that would make the interval clear the margin band's nearer edge, if
    the spread stays as measured; None when it cannot tell (one repetition, or the
    estimate sits on an edge)."""
    if ci.within_run_only or ci.ratio <= 0 or ci.lo <= 0:
        return None
    half = (math.log(ci.hi) - math.log(ci.lo)) / 2
    dist = abs(abs(math.log(ci.ratio)) - math.log(1 + m))
    if dist <= 1e-12 * max(half, 1.0):
        return None
    return max(ci.reps + 1, math.ceil(ci.reps * (half / dist) ** 2))


def interval(num, den, plan: dict | None = None, shifts: Shifts = None) -> RatioCI:
    """A pair's interval from each side's repetitions: the fixed design's 95% two-level
    bootstrap, or in a budgeted run (plan: its manifest's `budget`) the sequential
    interval at the pair's look; `shifts`: of the pace-adjusted reading
    (hvd_vs_ddp/run_model/pace.py)."""
    if not isinstance(plan, dict) or not plan.get("planned"):
        return ratio_ci(num, den, shifts=shifts)
    return sequential_ci(num, den, int(plan["planned"]), int(plan["max_reps"]),
                         float(plan.get("alpha", 1 - LEVEL)), shifts=shifts)



def detectable(ci: RatioCI, m: float) -> float | None:
    """The smallest difference this interval's spread would have called "faster"
    (margin.smallest_faster of its half-width); None for a within-run interval."""
    if ci.within_run_only or ci.lo <= 0 or ci.hi <= 0:
        return None
    return smallest_faster((math.log(ci.hi) - math.log(ci.lo)) / 2, m)


def pct(r: float) -> str:
    """How much faster the faster side is: r = 1.12 -> '12%', r = 0.8 -> '25%'."""
    return f"{(max(r, 1 / r) - 1) * 100:.0f}%"


@dataclass(frozen=True)
class Verdict:
    a: str                 # numerator series (horovod ...)
    b: str                 # denominator series (ddp ...)
    world_size: int
    ci: RatioCI
    margin: float
    verdict: str           # faster, equivalent, inconclusive
    faster: str | None     # the faster side when verdict == "faster"
    strength: str          # "firm" or "indicative" (one repetition: within-run interval)
    scope: str             # "communication" or "overhead" (world size 1)
    reps_needed: int | None

    def interval(self) -> str:
        return f"[{self.ci.lo:.3f}-{self.ci.hi:.3f}]"

    def text(self) -> str:
        """One clause: the verdict, the ratio and its interval, the caveats."""
        m = f"±{self.margin * 100:g}%"
        ratio = f"ratio {self.ci.ratio:.3f} {self.interval()}"
        if self.verdict == FASTER and self.scope == "overhead":  # a difference, not a win
            slow = self.b if self.faster == self.a else self.a
            s = f"{self.faster} ran {pct(self.ci.ratio)} more samples/s than {slow} ({ratio})"
        elif self.verdict == FASTER:
            slow = self.b if self.faster == self.a else self.a
            s = f"{self.faster} is {pct(self.ci.ratio)} faster than {slow} ({ratio})"
        elif self.verdict == EQUIVALENT:
            s = f"{self.a} and {self.b} are equivalent within {m} ({ratio})"
        else:
            more = ("repeat the run (--repeat 3 or more) to settle it" if self.reps_needed is None
                    and self.ci.within_run_only else
                    "the estimate sits on the margin; no number of repetitions settles it"
                    if self.reps_needed is None else
                    f"about {self.reps_needed} repetitions would settle it"
                    if self.reps_needed <= MAX_REPS else
                    f"more than {MAX_REPS} repetitions would be needed")
            s = f"{self.a} vs {self.b}: inconclusive at {m} ({ratio}; {more})"
        if self.scope == "overhead":
            s = f"{OVERHEAD} (1 rank): {s}"
        if self.strength == "indicative":
            s += "; indicative only: one repetition, the interval is within-run only"
        if self.ci.adjusted:
            s += "; pace-adjusted"
        if self.ci.look is not None:  # a budgeted run: say what the verdict took
            s += (f"; after {self.ci.reps} repetitions (look {self.ci.look}, "
                  f"{self.ci.level:.2%} interval)")
        return s

    def as_json(self) -> dict:
        return {"a": self.a, "b": self.b, "ratio": self.ci.ratio, "lo": self.ci.lo,
                "hi": self.ci.hi, "level": self.ci.level, "repetitions": self.ci.reps,
                "look": self.ci.look,
                "reading": "adjusted" if self.ci.adjusted else "unadjusted",
                "detectable": detectable(self.ci, self.margin),
                "verdict": self.verdict, "faster": self.faster, "strength": self.strength,
                "scope": self.scope, "repetitions_needed": self.reps_needed,
                "text": self.text()}


def judge(ci: RatioCI, margin: float, world_size: int, a: str, b: str) -> Verdict:
    v = classify(ci.lo, ci.hi, margin)
    faster = (a if ci.ratio > 1 else b) if v == FASTER else None
    return Verdict(a, b, int(world_size), ci, margin, v, faster,
                   "indicative" if ci.within_run_only else "firm",
                   "overhead" if world_size == 1 else "communication",
                   reps_needed(ci, margin) if v == INCONCLUSIVE else None)


if __name__ == "__main__":
    r, lo, hi, n = (float(x) for x in sys.argv[1:5])
    print(judge(RatioCI(r, lo, hi, int(n)), DEFAULT_MARGIN, 2, "horovod", "ddp").text())

"""Where a cell's variance comes from: between repetitions or step to step.

A verdict's interval is as wide as the variance of a repetition's mean throughput, which
has two parts: what differs from one fresh process to the next (where ranks and threads
land on the cores, start-up, neighbours: `between`) and what differs from one step to the
next inside a process (`within`, divided by the steps a repetition times). More timed
steps shrink only the second; only more repetitions, or a harness that removes what
differs between processes, shrink the first. This splits them, per cell, so a user sees
which one to pay for.

The estimator is the one-way random-effects ANOVA by the method of moments (Searle,
Casella & McCulloch 1992, "Variance Components", ch. 3), on the log of each step's
samples/s (so both parts are relative, like the verdicts' ratios): `within` is the pooled
variance of steps about their repetition's mean, `between` = (MSB - within) / n0 (0 when
negative), n0 the effective steps per repetition. Written here rather than fitted with
statsmodels' MixedLM: the balanced-to-nearly-balanced case has this closed form, it needs
no optimiser and gives the same answer (REML equals ANOVA for balanced one-way data), and
the run model must stay light (no torch, no statsmodels at report time).

    from hvd_vs_ddp.run_model.variance import reps_for_equivalence, split
    v = split([np.array([100., 98, 101]), np.array([90., 91, 89])])   # a VarianceSplit
    reps_for_equivalence(v.repetition_sd)     # repetitions a side an A/A pair needs at ±5%
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class VarianceSplit:
    repetitions: int
    steps: float             # mean timed steps per repetition
    between_sd: float        # sd of a repetition's mean log samples/s (relative: 0.05 ~ 5%)
    within_sd: float         # sd of one step's log samples/s about its repetition's mean
    between_share: float     # share of a repetition mean's variance that is between

    @property
    def repetition_sd(self) -> float:
        """The sd of one repetition's mean log samples/s: between^2 + within^2 / steps."""
        return math.sqrt(self.between_sd ** 2 + self.within_sd ** 2 / self.steps)

    def as_json(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> VarianceSplit:
        """From as_json's form, or a verdicts.json `variance_split` row (extra keys kept out)."""
        return cls(**{f.name: d[f.name] for f in fields(cls)})


def reps_for_equivalence(sd: float, margin: float = 0.05, z: float = 1.96) -> int:
    """Repetitions a side at which an A/A pair (true ratio 1) has an even chance that its
    interval fits in +-margin, `sd` the spread of a repetition's mean (repetition_sd; the
    best case: one look at 95%). The estimate's own error e ~ N(0, se), se^2 = (pi/2) sd^2
    (2/n) (the report's statistic is a median, whose variance under a normal spread is
    pi/2 the mean's), and the interval fits when |e| + z se <= log(1 + margin); |e| <=
    0.674 se half the time, so se <= log(1 + margin) / (z + 0.674).
    tests/unit/test_noise_floor.py holds it against the report's own interval."""
    return max(2, math.ceil(math.pi * (sd * (z + 0.674) / math.log1p(margin)) ** 2))


def steps_that_pay(v: VarianceSplit, process_s: float, step_s: float,
                   cap: int = 1000) -> int:
    """Timed steps per process that buy the most precision per second (Kalibera & Jones,
    "Rigorous benchmarking in reasonable time", ISMM 2013, two levels): with a process
    costing `process_s` before its first timed step (start-up, warm-up) and a step
    `step_s`, the variance of the mean over p processes of n steps is (between^2 + within^2
    / n) / p at a cost p (process_s + n step_s), least at n = sqrt((process_s / step_s)
    (within^2 / between^2)). At least 1; `cap` where the processes do not differ at all."""
    if step_s <= 0 or process_s < 0:
        raise ValueError("step_s must be > 0 and process_s >= 0")
    if v.between_sd <= 0:
        return cap
    n = math.sqrt((process_s / step_s) * (v.within_sd / v.between_sd) ** 2)
    return int(min(cap, max(1, round(n))))


def split(reps: Sequence[Sequence[float]]) -> VarianceSplit | None:
    """The variance split of one cell's repetitions (each a sequence of per-step
    samples/s); None with fewer than 2 repetitions or fewer than 2 steps in one."""
    groups = [np.log(np.asarray(r, dtype=float)) for r in reps]
    groups = [g[np.isfinite(g)] for g in groups]
    if len(groups) < 2 or min(g.size for g in groups) < 2:
        return None
    sizes = np.array([g.size for g in groups], dtype=float)
    total, k = sizes.sum(), len(groups)
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    within = float(sum(((g - g.mean()) ** 2).sum() for g in groups) / (total - k))
    msb = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    n0 = float((total - (sizes ** 2).sum() / total) / (k - 1))
    between = max(0.0, (msb - within) / n0)
    steps = float(sizes.mean())
    of_mean = between + within / steps
    return VarianceSplit(k, steps, float(np.sqrt(between)), float(np.sqrt(within)),
                         between / of_mean if of_mean > 0 else 0.0)

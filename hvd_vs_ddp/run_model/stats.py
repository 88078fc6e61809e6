"""Small statistics the report needs: median, IQR, and the interval of a ratio of
medians from a two-level (hierarchical) bootstrap over repetitions and steps.

Why a hand-written bootstrap: the unit of replication is a repetition (a fresh
process), and the steps inside one repetition share its placement, caches and
neighbours, so resampling steps alone (or scipy.stats.bootstrap, which resamples one
level of independent observations) gives intervals that ignore run-to-run variation:
measured on this machine, such a "95%" interval contained another run's ratio 54% of
the time. The two-level bootstrap resamples repetitions with replacement, then steps
with replacement inside each chosen repetition, pools them and takes the median; each
side of the ratio is resampled on its own and the percentile interval of the ratio of
the two medians is reported (Davison & Hinkley 1997, section 3.8, "two-stage"
resampling). With few repetitions, resampling R of R underestimates the spread of the
repetition level by a factor (R-1)/R in variance; the repetitions' own offsets (the
log of each repetition's median minus the log of the pooled median) are therefore
widened by sqrt(R/(R-1)) before resampling (the usual small-sample correction; with
R = 1 there is nothing to widen and the interval is within-run only). The seed is
fixed: the same inputs always give the same interval.

The calibration of these intervals is checked on recorded repetitions:
tests/unit/test_calibration.py (python -m tests.unit.test_calibration prints it).

Sequential looks (`hvd-vs-ddp run --budget`): a budgeted run looks at a pair after its
planned repetitions and again after every repetition it adds (up to a cap, `max_reps`),
and stops adding to a pair once its verdict is firm. A 95% interval at every look would
be wrong more often than 5% of the time (the naive repeated look). `sequential_ci`
spends the error over the looks instead (an alpha-spending rule in the sense of Lan &
DeMets 1983, Biometrika 70:659, with Bonferroni's union bound in place of the joint
normal law of the looks, so it holds however the looks correlate and whatever the
stopping rule; conservative): look 1 (the planned repetitions) gets alpha/2, each of
the K - 1 later looks alpha / (2 (K - 1)), K = max_reps - planned + 1; the sum is alpha,
so the chance that ANY look's interval misses the truth stays at most alpha. The
level-(1 - alpha_k) interval is the bootstrap's 95% percentile interval widened on each
side about the bootstrap median by z(1 - alpha_k/2) / z(0.975) (deep tails would need
more resamples than a look can afford). Each side of a pair uses its first n
repetitions, n the fewer of the two, so every look sees one state of the data: look
k = n - planned + 1. The simulation that checks the rates (and that the naive look
inflates them): hvd_vs_ddp/run_model/verdict_sim.py, benchmarks/verdict_simulation.py.

    from hvd_vs_ddp.run_model.stats import ratio_ci
    ci = ratio_ci([hvd_rep1, hvd_rep2], [ddp_rep1, ddp_rep2])  # RatioCI(ratio, lo, hi, reps)
    ci = sequential_ci(num_reps, den_reps, planned=3, max_reps=9)  # run --budget: per look
    python -m hvd_vs_ddp.run_model.stats 1,2,3/2,3,4 2,3,4/3,4,5           # reps split by '/'
"""
from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hvd_vs_ddp.results_schema.summary import finite_values, iqr, median  # noqa: F401 (re-exported)

N_RESAMPLES = 2000
SEED = 20261122
LEVEL = 0.95

Reps = Sequence[Sequence[float] | np.ndarray]  # per repetition: its per-step values


@dataclass(frozen=True)
class Shift:
    """A log shift subtracted from every value of each repetition of one side (the pace
    adjustment, hvd_vs_ddp/run_model/pace.py): `point` (R,) at the fitted coefficient,
    `boot` (n, R) refitted in each bootstrap replicate."""
    point: np.ndarray
    boot: np.ndarray


@dataclass(frozen=True)
class RatioCI:
    ratio: float   # median(all num steps) / median(all den steps) as measured
    lo: float
    hi: float
    reps: int = 1  # repetitions of the side with fewer: 1 = the interval is within-run only
    level: float = LEVEL
    resamples: int = N_RESAMPLES
    look: int | None = None  # sequential look (run --budget); None: a fixed design
    adjusted: bool = False   # the pace-adjusted reading (run_model/pace.py)

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    @property
    def within_run_only(self) -> bool:
        return self.reps < 2

    def text(self) -> str:
        return f"{self.ratio:.3f} [{self.lo:.3f}-{self.hi:.3f}]"


def _padded(reps: Reps) -> tuple[np.ndarray, np.ndarray]:
    """(R, max steps) array of log values padded with NaN, and each repetition's length."""
    arrs = [np.log(finite_values(r)) for r in reps]
    if not arrs:
        raise ValueError("no repetitions")
    lens = np.array([a.size for a in arrs])
    out = np.full((len(arrs), lens.max()), np.nan)
    for i, a in enumerate(arrs):
        out[i, :a.size] = a
    return out, lens


def widened(reps: Reps) -> np.ndarray:
    """Log values with each repetition's offset from the pooled median widened by
    sqrt(R/(R-1)) (see the module docstring); R = 1: unchanged."""
    return _widen(_padded(reps)[0])


def _widen(logs: np.ndarray) -> np.ndarray:
    r = logs.shape[0]
    if r < 2:
        return logs
    centre = np.nanmedian(logs)
    offsets = np.nanmedian(logs, axis=1) - centre
    return logs + (np.sqrt(r / (r - 1)) - 1) * offsets[:, None]


def boot_medians(reps: Reps, rng: np.random.Generator, n: int = N_RESAMPLES,
                 correct: bool = True, shift: Shift | None = None) -> np.ndarray:
    """n two-level bootstrap replicates of the pooled median (log scale); with `shift`,
    of the values shifted per repetition (widened after the point shift, each replicate
    then moved by its own refitted shift's difference from the point one)."""
    logs, lens = _padded(reps)
    if shift is not None:
        logs = logs - np.asarray(shift.point, float)[:, None]
        dev = np.asarray(shift.boot, float)[:n] - np.asarray(shift.point, float)[None, :]
    logs = _widen(logs) if correct else logs
    r, width = logs.shape
    out = np.empty(n)
    chunk = max(1, 2_000_000 // (r * width))
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        pick = rng.integers(0, r, size=(k, r))                        # repetitions
        steps = (rng.random((k, r, width)) * lens[pick][:, :, None]).astype(int)  # steps
        vals = logs[pick[:, :, None], steps]
        if shift is not None:
            vals = vals - np.take_along_axis(dev[start:start + k], pick, axis=1)[:, :, None]
        if (lens == width).all():  # no padding: the plain median is the same, and faster
            out[start:start + k] = np.median(vals.reshape(k, -1), axis=1)
            continue
        vals[:, :, :][np.arange(width)[None, None, :] >= lens[pick][:, :, None]] = np.nan
        out[start:start + k] = np.nanmedian(vals.reshape(k, -1), axis=1)
    return out


Shifts = tuple[Shift, Shift] | None  # (num's, den's): the pace-adjusted reading


def ratio_ci(num: Reps, den: Reps, resamples: int = N_RESAMPLES, seed: int = SEED,
             level: float = LEVEL, correct: bool = True, shifts: Shifts = None) -> RatioCI:
    """Percentile interval of median(num)/median(den) from the two-level bootstrap.
    num and den are lists of repetitions (each a list of per-step values); a flat list of
    numbers is taken as one repetition. `shifts`: each side's per-repetition log shifts
    (the pace adjustment), the interval then of the adjusted reading."""
    num, den = _as_reps(num), _as_reps(den)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    logr = boot_log_ratios(num, den, resamples, seed, correct, shifts)
    tail = (1 - level) / 2 * 100
    lo, hi = np.exp(np.percentile(logr, [tail, 100 - tail]))
    return RatioCI(_pooled_ratio(num, den, shifts), float(lo), float(hi),
                   min(len(num), len(den)), level, resamples, adjusted=shifts is not None)


def boot_log_ratios(num: Reps, den: Reps, resamples: int = N_RESAMPLES, seed: int = SEED,
                    correct: bool = True, shifts: Shifts = None) -> np.ndarray:
    """The bootstrap replicates of log(median(num) / median(den))."""
    rng = np.random.default_rng(seed)
    sn, sd = shifts if shifts is not None else (None, None)
    return (boot_medians(num, rng, resamples, correct, sn)
            - boot_medians(den, rng, resamples, correct, sd))


def _pooled(reps: list, shift: Shift | None) -> float:
    if shift is None:
        return median(np.concatenate([finite_values(r) for r in reps]))
    return median(np.concatenate([finite_values(r) * math.exp(-float(s))
                                  for r, s in zip(reps, shift.point)]))


def _pooled_ratio(num: list, den: list, shifts: Shifts = None) -> float:
    sn, sd = shifts if shifts is not None else (None, None)
    return float(_pooled(num, sn) / _pooled(den, sd))


# -- sequential looks (run --budget; see the module docstring) -------------------------
def max_looks(planned: int, max_reps: int) -> int:
    return max(1, max_reps - planned + 1)


def spent_alpha(look: int, looks: int, alpha: float = 1 - LEVEL) -> float:
    """The error look k of K may spend: alpha/2 at look 1, alpha/(2(K-1)) at each later
    one (K = 1: all of alpha); the sum over the K looks is alpha."""
    if not 1 <= look <= looks:
        raise ValueError(f"look must be in 1..{looks}, got {look}")
    if looks == 1:
        return alpha
    return alpha / 2 if look == 1 else alpha / (2 * (looks - 1))


def look_of(reps: int, planned: int) -> int:
    """The look a pair is at with `reps` repetitions on each side (1 at the planned ones)."""
    return max(1, reps - planned + 1)


def _z(level: float) -> float:
    return statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)


def sequential_ci(num: Reps, den: Reps, planned: int, max_reps: int,
                  alpha: float = 1 - LEVEL, resamples: int = N_RESAMPLES, seed: int = SEED,
                  correct: bool = True, shifts: Shifts = None) -> RatioCI:
    """The interval of a budgeted run's pair at its look: each side's first n repetitions
    (n the fewer, at most max_reps), level 1 - spent_alpha(look, K), the 95% percentile
    interval widened about the bootstrap median by the ratio of normal quantiles."""
    num, den = _as_reps(num), _as_reps(den)
    n = min(len(num), len(den), max(max_reps, planned))
    num, den = num[:n], den[:n]
    if shifts is not None:  # each side's first n repetitions' shifts
        shifts = tuple(Shift(s.point[:n], s.boot[:, :n]) for s in shifts)  # type: ignore[assignment]
    look = look_of(n, planned)
    level = 1 - spent_alpha(look, max_looks(planned, max_reps), alpha)
    logr = boot_log_ratios(num, den, resamples, seed, correct, shifts)
    mid = float(np.median(logr))
    lo95, hi95 = np.percentile(logr, [2.5, 97.5])
    wide = _z(level) / _z(LEVEL)
    lo, hi = math.exp(mid - (mid - lo95) * wide), math.exp(mid + (hi95 - mid) * wide)
    return RatioCI(_pooled_ratio(num, den, shifts), lo, hi, n, level, resamples, look,
                   adjusted=shifts is not None)


def _as_reps(x) -> list:
    x = list(x)
    if x and np.ndim(x[0]) == 0:
        return [x]
    return x


if __name__ == "__main__":
    a, b = ([[float(v) for v in rep.split(",")] for rep in s.split("/")] for s in sys.argv[1:3])
    print(ratio_ci(a, b).text())

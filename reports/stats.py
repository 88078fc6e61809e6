"""Small statistics the report needs: median, IQR, a bootstrap CI of a ratio of
medians, and the verdict that CI implies.

The bootstrap resamples each side's per-step values independently (with
replacement), takes the ratio of the two medians per resample, and reports the
percentile interval. The RNG seed is fixed, so the same inputs always give the same
interval and a report is reproducible. The interval reflects step-to-step variation
inside one run; it says nothing about run-to-run variation (repeat runs for that).

    from reports.stats import ratio_ci, verdict
    ci = ratio_ci(hvd_samples_per_s, ddp_samples_per_s)     # RatioCI(ratio, lo, hi)
    verdict(ci, "horovod faster", "ddp faster")
    python -m reports.stats 1,2,3 2,3,4                     # ratio CI of two lists
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from results.summary import finite_values, iqr, median  # noqa: F401 (re-exported)

N_RESAMPLES = 2000
SEED = 20261122
LEVEL = 0.95
NO_DIFFERENCE = "no significant difference"


_values = finite_values  # one implementation of median/IQR: results.summary


@dataclass(frozen=True)
class RatioCI:
    ratio: float   # median(num) / median(den) on the data as measured
    lo: float
    hi: float
    level: float = LEVEL
    resamples: int = N_RESAMPLES

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    def text(self) -> str:
        pct = round(self.level * 100)
        return f"ratio {self.ratio:.2f}, {pct}% CI {self.lo:.2f}-{self.hi:.2f}"


def _boot_medians(a: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    out = np.empty(n)
    chunk = max(1, 2_000_000 // a.size)  # bound memory for long runs
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        idx = rng.integers(0, a.size, size=(k, a.size))
        out[start:start + k] = np.median(a[idx], axis=1)
    return out


def ratio_ci(num: Sequence[float], den: Sequence[float], resamples: int = N_RESAMPLES,
             seed: int = SEED, level: float = LEVEL) -> RatioCI:
    """Percentile bootstrap CI of median(num)/median(den), resampling each side."""
    a, b = _values(num), _values(den)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    ratios = _boot_medians(a, rng, resamples) / _boot_medians(b, rng, resamples)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(ratios, [tail, 100 - tail])
    return RatioCI(float(np.median(a) / np.median(b)), float(lo), float(hi), level, resamples)


def verdict(ci: RatioCI, above: str, below: str) -> str:
    """`above` when the whole CI is above 1.0, `below` when below, else no difference."""
    if ci.lo > 1.0:
        return above
    if ci.hi < 1.0:
        return below
    return NO_DIFFERENCE


if __name__ == "__main__":
    xs, ys = ([float(v) for v in s.split(",")] for s in sys.argv[1:3])
    c = ratio_ci(xs, ys)
    print(c.text(), "->", verdict(c, "first faster", "second faster"))

"""Stragglers: a synchronous step waits for the slowest of N ranks.

Every rank's step varies from step to step (the OS, the allocator, the host's other
threads, the GPU's clocks). A data-parallel step ends only when every rank has
contributed its last gradient (DDP's last bucket, Horovod's last response: both wait
in the allreduce for all ranks), so what N ranks deliver per step is the expected
maximum over N of one rank's step, not its median. One node's measured per-rank step
distribution is carried to N ranks that way.

Which distribution, and why: a rank's step relative to its own median, X = t / median,
is a body and a tail (peaks over threshold, the standard extreme-value construction):
- below its 90th percentile, a lognormal (log X ~ Normal(0, sigma)): step times are
  positive and right-skewed, and sigma is read from the upper half, (q90 - q50) of
  log X / 1.2816, since the maximum is made of the right tail, not the left;
- above it, an exponential excess (a generalised Pareto tail of shape 0, the Gumbel
  domain) with the mean excess over q90 as its scale, `beta`: the rare long steps (a
  page fault, the OS, a collector, the host's other threads) that a node sees now and
  then and that 512 ranks see nearly every step. Measured on one H200 (ResNet-50),
  that excess is about 1 ms whatever the step (0.8 ms at batch 32, 1.0 ms at 64): a
  host's hiccups last a time, not a fraction, so beta is carried in seconds.
The expected maximum over N is then the integral of the quantile function under the
maximum's distribution, E[max_N X] = integral over v in (0, 1) of Q(v^(1/N)): the body
gives sigma * sqrt(2 ln N)-like growth, the tail beta * ln(0.1 N) past N = 10. Unlike
the empirical bootstrap maximum (`empirical_expected_max`, kept beside it for the check)
it does not stop at the largest step the sample happened to hold, and unlike a lognormal
alone it does not miss the hiccups (checked: docs/projection.md, 'Stragglers').

The independent part of the variation is what grows with N; variation common to all
ranks (the same input, a shared clock) is assumed absent. Each rank's steps are taken
relative to that rank's own median, so a persistently slower rank is not counted as
jitter.

    sigma, beta = fit([rank0_steps, rank1_steps])   # one node's per-rank steps
    factor(sigma, beta, 512)                         # step multiplier at 512 ranks
    python -m hvd_vs_ddp.projection.straggler_check # fit on 1-2 ranks, predict 3-4
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy.stats import norm

Z90 = float(norm.ppf(0.9))   # 1.2816
TAIL = 0.9                   # the body/tail threshold (quantile)
GRID = 4096                  # quantile grid of the numerical expectation

# A GPU rank's spread where no run says it (the band draws each uniformly over its
# range): the body's sigma and the tail's mean excess in seconds. Source:
# docs/projection.md, 'Stragglers': ResNet-50 on one H200 of a 16-core host, sigma 1.6%
# and 1.0 ms at batch 64, 0.8 ms at batch 32; the ranges span about half to twice that.
GPU_SIGMA = (0.005, 0.02)
GPU_BETA_S = (0.0005, 0.0015)


def _log_ratios(rank_steps: Sequence[Sequence[float]]) -> np.ndarray:
    out = []
    for steps in rank_steps:
        t = np.asarray([s for s in steps if s and s > 0], dtype=float)
        if len(t) >= 2:
            out.append(np.log(t / np.median(t)))
    return np.concatenate(out) if out else np.zeros(0)


def fit(rank_steps: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(sigma, beta) of each rank's step relative to its own median: sigma from the
    upper body, (q90 - q50) of log(t / median) / z(0.9); beta the mean excess of
    t / median over its 90th percentile (relative: times a median step gives seconds).
    (0, 0) with fewer than 3 steps."""
    y = _log_ratios(rank_steps)
    if y.size < 3:
        return 0.0, 0.0
    q50, q90 = np.percentile(y, [50, 90])
    x = np.exp(y)
    thr = float(np.exp(q90))
    excess = x[x > thr] - thr
    return float(max(0.0, (q90 - q50) / Z90)), float(excess.mean()) if excess.size else 0.0


def fit_sigma(rank_steps: Sequence[Sequence[float]]) -> float:
    """The body's sigma alone (fit)."""
    return fit(rank_steps)[0]


@lru_cache(maxsize=8192)
def _expected_max(sigma: float, beta: float, n: int) -> float:
    v = (np.arange(GRID) + 0.5) / GRID
    u = v ** (1.0 / n)                      # the maximum's CDF is F^n
    body = np.exp(sigma * norm.ppf(np.minimum(u, TAIL)))
    tail = np.exp(sigma * Z90) + beta * np.log((1 - TAIL) / np.maximum(1 - u, 1e-300))
    return float(np.mean(np.where(u > TAIL, tail, body)))


def expected_max(sigma: float, n: int, beta: float = 0.0) -> float:
    """E[max of n iid X], X = a rank's step over its median: lognormal(0, sigma) below
    its 90th percentile, an exponential excess of mean `beta` (relative) above."""
    if (sigma <= 0 and beta <= 0) or n < 1:
        return 1.0
    return _expected_max(round(float(sigma), 5), round(float(beta), 6), int(n))


def factor(sigma: float, n: int, beta: float = 0.0) -> float:
    """What the slowest of n ranks makes of one rank's mean step: E[max_n X] / E[X]."""
    if n <= 1 or (sigma <= 0 and beta <= 0):
        return 1.0
    return expected_max(sigma, n, beta) / expected_max(sigma, 1, beta)


def empirical_expected_max(samples: Sequence[float] | np.ndarray, n: int) -> float:
    """The bootstrap expected maximum of n draws from `samples` (order statistics:
    the k-th smallest of m is the maximum with probability (k/m)^n - ((k-1)/m)^n)."""
    x = np.sort(np.asarray(samples, dtype=float))
    m = x.size
    k = np.arange(1, m + 1)
    w = (k / m) ** n - ((k - 1) / m) ** n
    return float(np.sum(w * x))

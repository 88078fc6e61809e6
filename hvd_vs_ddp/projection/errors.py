"""The model's own error, estimated out of sample, and carried into every band.

A published value p and the model's median projection m give a residual
log(p / m); a head-to-head row gives one per library and one for the ratio Horovod/DDP.
`ModelError` (hvd_vs_ddp/projection/model.py) is a normal on the log scale per key
("ddp", "horovod", "ratio"), centred on the model (no bias term) with a robust spread:
the median absolute residual about zero, scaled to a normal's standard deviation
(scipy.stats.median_abs_deviation, scale "normal"). Both choices were measured leave
one source out: a bias per key (the residuals' mean) and the plain standard deviation
let one source's outliers (the Bagua page's VGG16 rows over 100 GbE, +55% to +143%)
shift and widen every other source's projections, and doubled the median errors
(docs/projection.md). A band then draws the inputs and this error together.

Leave one source out (`loso`): for each source (a publication, a benchmark table), the
error is estimated from every other source's residuals only, and that source's rows are
projected with it; the bands' coverage, the errors and the verdicts reported in
docs/projection.md are these out-of-sample ones. Rows marked out of scope in the data
are projected and listed, never used to estimate the error nor counted in the goals.

    me = model_error(residuals)               # from [(source, key, residual), ...]
    band(draws, me, "horovod", rng)           # (median, low, high) with the error drawn
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
from scipy.stats import median_abs_deviation

from hvd_vs_ddp.projection.model import ModelError

KEYS = ("ddp", "horovod", "ratio")
LEVEL = 95
MIN_RESIDUALS = 3  # fewer: the key's error is unknown and taken from the others' spread


def model_error(residuals: Iterable[tuple[str, str, float]],
                leave_out: str | None = None) -> ModelError:
    """Mean and spread of the log residuals per key, without `leave_out`'s rows. A key
    with fewer than MIN_RESIDUALS residuals gets no bias and the widest spread of the
    others (unknown is not precise)."""
    by: dict[str, list[float]] = {k: [] for k in KEYS}
    for source, key, r in residuals:
        if source != leave_out and key in by and np.isfinite(r):
            by[key].append(r)
    mean, sd, n = {}, {}, {}
    for k, rs in by.items():
        if len(rs) >= MIN_RESIDUALS:
            mean[k], n[k] = 0.0, len(rs)
            sd[k] = float(median_abs_deviation(rs, center=_zero, scale="normal"))
    widest = max(sd.values(), default=0.1)
    for k in KEYS:
        if k not in sd:
            mean[k], sd[k], n[k] = 0.0, widest, len(by[k])
    return ModelError(mean, sd, n)


def _zero(x, axis=None):
    return 0.0


def band(draws: np.ndarray, me: ModelError | None, key: str, rng: np.random.Generator,
         level: float = LEVEL) -> tuple[float, float, float]:
    """The draws' median (the model's value: its error is centred on it) and the
    percentile band of the draws (inputs only) times exp(model error)."""
    x = np.asarray(draws, dtype=float)
    med = float(np.median(x))
    if me is not None:
        x = x * np.exp(me.draws(key, rng, x.size))
    lo, hi = np.percentile(x, [(100 - level) / 2, (100 + level) / 2])
    return med, float(min(lo, med)), float(max(hi, med))

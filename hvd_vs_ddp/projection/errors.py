"""The model's own error, estimated out of sample, and carried into every band.

A published value p and the model's median projection m give a residual
log(p / m); a head-to-head row gives one per library and one for the ratio Horovod/DDP.
Three things spread a residual, and a band must count each once:
- the inputs: what the model does not know about the machine (link efficiencies, the
  terms' ranges in terms.py) is drawn, so the draws already spread the projection
  (`inputs`: the root mean of the draws' own log variance over the residuals' rows);
- the publication's noise: the same configuration published twice differs (CSC's table
  on different dates, Puhti 0.862 to 0.950; Bagua's two VGG16 figures at 128 GPUs,
  0.922 and 1.091). `noise` is the pooled spread of residuals inside a configuration
  (rows the model cannot tell apart: the same source, model, sizes, links and library
  settings; hvd_vs_ddp/projection/published_rows.py names them), from the repeats alone;
- the model's own error, what is left: `model`^2 = max(0, total^2 - inputs^2 -
  noise^2), where `total` is the residuals' robust spread about zero (scipy's
  median_abs_deviation, scale "normal", centred on the model: no bias term).
`ModelError` (hvd_vs_ddp/projection/model.py) keeps the split. A band that must hold a
figure someone measures (a library's samples/s, a published ratio) draws the inputs
and both errors; the verdict's band is about the true ratio and draws the inputs and
the model's error alone: noise in the figures it is judged against does not make the
projection less sure of the truth. Before this split the inputs were drawn and the
whole residual spread added on top, counting the inputs twice and the noise as model
error (docs/projection.md, 'Bands').

This split is the error at the measured size. How it grows with the scale
factor (devices projected over devices measured) is fitted by extrapolation in
hvd_vs_ddp/projection/extrapolation.py (`ModelError.growth`); `band(..., scale=s)`
draws it.

Leave one source out (`loso` in against_published.py): for each source (a publication, a
benchmark table), every part is estimated from the other sources' rows only. Rows
marked out of scope in the data are projected and listed, never used here.

    me = model_error(residuals)        # [Residual(source, key, value, config, input_var)]
    band(draws, me, "horovod", rng)    # (median, low, high): inputs, model and noise
    band(draws, me, "ratio", rng, measurement=False)   # the verdict's: no noise
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, NamedTuple

import numpy as np
from scipy.stats import median_abs_deviation

from hvd_vs_ddp.projection.model import ModelError

KEYS = ("ddp", "horovod", "ratio")
LEVEL = 95
MIN_RESIDUALS = 3  # fewer: the key's error is unknown and taken from the others' spread


class Residual(NamedTuple):
    source: str
    key: str                  # "ddp", "horovod" or "ratio"
    value: float              # log(published / projected median)
    config: object = None     # rows with the same config repeat one configuration
    input_var: float = 0.0    # the variance of the log of the row's own input draws


def _zero(x, axis=None):
    return 0.0


def _noise(rs: list[Residual]) -> tuple[float, int]:
    """The pooled standard deviation of residuals about their configuration's mean, and
    its degrees of freedom (repeats beyond the first of each configuration)."""
    groups: dict[object, list[float]] = defaultdict(list)
    for i, r in enumerate(rs):
        groups[r.config if r.config is not None else ("row", i)].append(r.value)
    ss = sum(float(((np.array(g) - np.mean(g)) ** 2).sum()) for g in groups.values())
    df = sum(len(g) - 1 for g in groups.values())
    return (math.sqrt(ss / df) if df else 0.0), df


SPLITS = ("noise", "inputs", "none")


def model_error(residuals: Iterable[Residual | tuple], leave_out: str | None = None,
                split: str = "noise", floor: float = 0.0) -> ModelError:
    """The split of the residuals' spread per key, without `leave_out`'s rows (module
    docstring). A key with fewer than MIN_RESIDUALS residuals takes the widest spread
    of the others as its model error (unknown is not precise). `split` and `floor` are
    the variants `python -m hvd_vs_ddp.projection.validation --variants` measures:
    "inputs" takes the inputs' spread out but counts the noise as model error, "none"
    is the whole spread as model error (before the split); `floor` is a least model
    error."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    by: dict[str, list[Residual]] = {k: [] for k in KEYS}
    for r in residuals:
        r = Residual(*r)
        if r.source != leave_out and r.key in by and np.isfinite(r.value):
            by[r.key].append(r)
    model, noise, total, inputs, n = {}, {}, {}, {}, {}
    for k, rs in by.items():
        n[k] = len(rs)
        if len(rs) < MIN_RESIDUALS:
            continue
        total[k] = float(median_abs_deviation([r.value for r in rs], center=_zero,
                                              scale="normal"))
        inputs[k] = math.sqrt(float(np.mean([r.input_var for r in rs])))
        noise[k] = _noise(rs)[0]
        left = total[k] ** 2 - (inputs[k] ** 2 if split != "none" else 0.0) \
            - (noise[k] ** 2 if split == "noise" else 0.0)
        model[k] = max(floor, math.sqrt(max(0.0, left)))
        if split != "noise":  # the noise is not told apart: it is all model error
            noise[k] = 0.0
    widest = max(total.values(), default=0.1)
    loudest = max(noise.values(), default=0.0)
    for k in KEYS:
        if k not in model:
            model[k], noise[k], total[k], inputs[k] = widest, loudest, widest, 0.0
    return ModelError(model, noise, n, total, inputs)


def components(me: ModelError) -> dict[str, dict[str, float]]:
    """{key: {"total", "inputs", "noise", "model", "n"}}: the split, for the record."""
    return {k: {"total": me.total.get(k, 0.0), "inputs": me.inputs.get(k, 0.0),
                "noise": me.noise.get(k, 0.0), "model": me.model.get(k, 0.0),
                "n": me.n.get(k, 0)} for k in KEYS}


def band(draws: np.ndarray, me: ModelError | None, key: str, rng: np.random.Generator,
         level: float = LEVEL, measurement: bool = True,
         scale: float = 1.0) -> tuple[float, float, float]:
    """The draws' median (the model's value: its error is centred on it) and the
    percentile band of the draws (inputs only) times exp(model error), and times
    exp(noise) where the band must hold a measured figure. `scale`: devices projected
    over devices measured, where the error grows with it (`ModelError.growth`)."""
    x = np.asarray(draws, dtype=float)
    med = float(np.median(x))
    if me is not None:
        x = x * np.exp(me.draws(key, rng, x.size, measurement, scale))
    lo, hi = np.percentile(x, [(100 - level) / 2, (100 + level) / 2])
    return med, float(min(lo, med)), float(max(hi, med))


def published_residuals(projected) -> list[Residual]:
    """log(published / projected median) of every in-scope projected row
    (published_rows.project_all's), with its source, its configuration and the variance
    of its own draws. Here, below both readers (against_published: leave one source out;
    extrapolation: by scale), so neither imports the other."""
    out = []
    for r in projected:
        if not r.in_scope:
            continue
        out += [Residual(r.source, v.library, float(np.log(v.published / v.bare)), r.config,
                         float(np.log(v.draws).var())) for v in r.values]
        if r.ratio_draws is not None and r.ratio_published:
            out.append(Residual(r.source, "ratio",
                                float(np.log(r.ratio_published / np.median(r.ratio_draws))),
                                r.config, float(np.log(r.ratio_draws).var())))
    return out

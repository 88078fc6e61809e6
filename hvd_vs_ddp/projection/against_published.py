"""The projection held against published results, out of sample: every row projected and judged.

Two files of published results, each row with its source, its compute source and the
assumptions made for it:
- hvd_vs_ddp/projection/data/head_to_head.csv: both libraries on the same cluster (CSC's
  ml-benchmarks table, the Bagua benchmark page; an OSC lab report and Ray's SGD benchmark
  table listed but marked out of scope, with the reason);
  per row both libraries' errors, the projected ratio Horovod/DDP with its band and
  verdict against the published ratio's verdict (hvd_vs_ddp/run_model/margin.py);
- hvd_vs_ddp/projection/data/published.csv: one library each (PyTorch's DDP benchmark
  README, Horovod's docs/benchmarks.rst; NVIDIA DeepLearningExamples' BERT-large tables,
  DDP in PyTorch to 256 GPUs and Horovod in TensorFlow 2 to 512: the values at 256
  devices and more).

Everything reported is leave-one-source-out (hvd_vs_ddp/projection/errors.py): a row's
band carries the model's error and the publications' noise estimated from the other
sources' rows only. Goals: the projected verdict agrees with the published
ratio on >= 80% of head-to-head rows, the median absolute error is <= 10% for each
library, the bands hold >= 80% of the published values.

A configuration is what the model is told about a row (CONFIG_FIELDS: source, model,
batch, sizes, links, library settings; not the date, the data or the compute): rows of
one configuration are repeats, published on other dates or in other figures. Their
spread is the publications' own noise (errors.py), and they judge the published verdict
a second way: a configuration's verdict is firm where all its repeats give the same
verdict, "contradictory" where they do not (no projection can agree with both). The
goal figure is per row, each figure's own verdict, as the issue states it; the line
also gives the agreement with the configurations' firm verdicts.

The rows and their projections (inputs' draws only, before any model error):
hvd_vs_ddp/projection/published_rows.py. The tables, the goals' line and the command
that prints them: hvd_vs_ddp/projection/validation.py.

    from hvd_vs_ddp.projection import against_published as ap
    s = ap.summary(ap.loso())   # the goals' figures, leave one source out
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.projection import rows_file
from hvd_vs_ddp.projection.errors import band, components, model_error
from hvd_vs_ddp.projection.errors import published_residuals as residuals
from hvd_vs_ddp.projection.model import ModelError
from hvd_vs_ddp.projection.published_rows import DRAWS, Row, _pair, _single, project_all
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN, FASTER, classify

GOAL = 0.10            # median absolute error per library
GOAL_AGREEMENT = 0.80  # verdicts that match the published ratio's
GOAL_COVERAGE = 0.80   # published values inside their band
# at scale, scaling efficiency (per-device throughput over one device's) in
# points, leave one source out, per library
SCALE = 256
GOAL_SCALE_MEDIAN = 5.0
GOAL_SCALE_WORST = 10.0
CONTRADICTORY = "contradictory"


def _verdict(lo: float, hi: float, margin: float, ratio: float) -> str:
    v = classify(lo, hi, margin)
    return f"{v} ({'horovod' if ratio > 1 else 'ddp'})" if v == FASTER else v



def assess(row: Row, me: ModelError | None, margin: float = DEFAULT_MARGIN,
           seed: int = 0) -> Row:
    """The row with its bands, errors and verdicts under model error `me`: a library's
    band and the ratio's measurement band must hold a published figure (model error and
    noise), the verdict's band is about the true ratio (model error alone)."""
    rng = np.random.default_rng([seed, row.devices])
    n = row.devices  # projected from one device's compute time: n is the scale
    for v in row.values:
        v.projected = band(v.draws, me, v.library, rng, scale=n)
    if row.ratio_draws is not None and row.ratio_published is not None:
        row.ratio = band(row.ratio_draws, me, "ratio", rng, measurement=False, scale=n)
        row.ratio_measurement = band(row.ratio_draws, me, "ratio", rng, scale=n)
        row.verdict = _verdict(row.ratio[1], row.ratio[2], margin, row.ratio[0])
        rp = row.ratio_published
        row.published_verdict = _verdict(rp, rp, margin, rp)
    return row


def loso(draws: int = DRAWS, margin: float = DEFAULT_MARGIN, split: str = "noise",
         floor: float = 0.0, growth: bool = False) -> list[Row]:
    """Every row assessed with the error estimated without its own source (`split`,
    `floor`: errors.model_error's variants; `growth`: with the error's growth with the
    scale factor, fitted by extrapolation without the source as well)."""
    from hvd_vs_ddp.projection import extrapolation

    projected = project_all(draws)
    res = residuals(projected)
    ext = extrapolation.residuals(projected) if growth else []

    def error(source: str) -> ModelError:
        me = model_error(res, leave_out=source, split=split, floor=floor)
        return extrapolation.fit(ext, lambda x: x.source != source, me) if growth else me
    return judge_configurations([assess(r, error(r.source), margin) for r in projected])


# The ways of carrying the model's error that were measured (docs/projection.md, 'Bands')
VARIANTS = (("the whole residual spread on top of the inputs' draws (the first way "
             "measured)", "none", 0.0),
            ("the inputs' spread taken out, the noise left in the model error", "inputs",
             0.0),
            ("the inputs' spread and the repeats' noise taken out (this projection)",
             "noise", 0.0),
            ("as above, with a least model error of 1%", "noise", 0.01),
            ("as above, with a least model error of 2%", "noise", 0.02))


def variants(draws: int = DRAWS, margin: float = DEFAULT_MARGIN) -> list[tuple[str, dict]]:
    """The goal figures under each of VARIANTS, leave one source out."""
    return [(name, summary(loso(draws, margin, split, floor)))
            for name, split, floor in VARIANTS]


def judge_configurations(assessed: list[Row]) -> list[Row]:
    """Each head-to-head row's configuration verdict: the verdict all its repeats give,
    or CONTRADICTORY where they differ."""
    groups: dict[tuple, list[Row]] = {}
    for r in assessed:
        if r.head_to_head:
            groups.setdefault((r.in_scope, r.config), []).append(r)
    for rs in groups.values():
        seen = {r.published_verdict for r in rs}
        verdict = seen.pop() if len(seen) == 1 else CONTRADICTORY
        for r in rs:
            r.config_verdict = verdict
    return assessed


def error_split(draws: int = DRAWS) -> list[tuple[str, dict]]:
    """The model error's parts (errors.components) from every in-scope source, then
    from all but each one (what that source's rows are projected with)."""
    res = residuals(project_all(draws))
    sources = sorted({r.source for r in res})
    return [("all sources", components(model_error(res)))] + [
        (f"without {s}", components(model_error(res, leave_out=s))) for s in sources]


def judge_file(path: Path, draws: int = DRAWS, margin: float = DEFAULT_MARGIN) -> list[Row]:
    """Rows from elsewhere (`--rows`), projected out of sample (with the repository's
    error) and judged; a file it cannot use is a RowsError (one line)."""
    try:
        table = rows_file.read(path)
    except rows_file.RowsError as exc:
        raise rows_file.RowsError(f"--rows {path}: {exc}") from None
    me = current_error(draws)
    out = []
    for row in table:
        try:  # an empty or missing scope is "in" (_pair, _single)
            projected = _single(row, draws) if row.get("library") else _pair(row, draws)
        except (KeyError, ValueError, TypeError, InputError) as exc:
            # an unknown link is an InputError that is also a KeyError (UnknownName)
            missing = isinstance(exc, KeyError) and not isinstance(exc, InputError)
            what = f"missing column {exc}" if missing else str(exc)
            raise rows_file.RowsError(f"--rows {path} line {row[rows_file.LINE]}: "
                                      f"{what.splitlines()[0]}") from None
        out.append(assess(projected, me, margin))
    return judge_configurations(out)


@cache
def current_error(draws: int = DRAWS) -> ModelError:
    """The error a new projection carries: every in-scope source's residuals, and its
    growth with the scale factor fitted by extrapolation."""
    from hvd_vs_ddp.projection import extrapolation
    return extrapolation.current(draws)


def at_scale(assessed: list[Row], smallest: int = SCALE) -> dict:
    """The goal at scale: at `smallest` devices and more, each library's scaling
    efficiency error in points (projected median - published, x 100), leave one source
    out as every row here, with the sources it rests on."""
    out: dict = {}
    for lib in ("ddp", "horovod"):
        pts = [(r.source, r.id, 100 * (v.projected[0] - v.published) * v.to_efficiency)
               for r in assessed if r.in_scope and r.devices >= smallest
               for v in r.values if v.library == lib]
        errs = [abs(p) for _, _, p in pts]
        out[lib] = {"values": len(pts), "sources": sorted({s for s, _, _ in pts}),
                    "median_points": float(np.median(errs)) if errs else None,
                    "worst_points": float(max(errs)) if errs else None,
                    "rows": [{"source": s, "id": i, "points": p} for s, i, p in pts]}
    out["goals"] = {"median_points": GOAL_SCALE_MEDIAN, "worst_points": GOAL_SCALE_WORST,
                    "devices": smallest}
    return out


def _median(xs: list[float]) -> float | None:
    return float(np.median(xs)) if xs else None


def summary(assessed: list[Row]) -> dict:
    inside = [r for r in assessed if r.in_scope]
    h2h = [r for r in inside if r.head_to_head]
    values = [v for r in inside for v in r.values]
    # None: no published value of that library in these rows (`validation --rows` with one
    # library's rows), not a median of nothing (nan)
    mae = {lib: _median([abs(v.error) for v in values if v.library == lib])
           for lib in ("ddp", "horovod")}
    bare = {lib: _median([abs(v.bare / v.published - 1) for v in values
                          if v.library == lib]) for lib in ("ddp", "horovod")}
    firm = [r for r in h2h if not r.verdict.startswith("inconclusive")]
    point = [_verdict(r.ratio[0], r.ratio[0], DEFAULT_MARGIN, r.ratio[0]) == r.published_verdict
             for r in h2h]
    judged = [r for r in h2h if r.config_verdict and r.config_verdict != CONTRADICTORY]
    configs: dict[tuple, list[Row]] = {}
    for r in judged:
        configs.setdefault(r.config, []).append(r)
    return {"head_to_head_rows": len(h2h), "values": len(values),
            "firm_verdicts": len(firm), "firm_agree": sum(r.agrees for r in firm),
            "inconclusive_verdicts": len(h2h) - len(firm),
            "config_rows": len(judged),
            "config_agreement": float(np.mean([r.agrees_with_config for r in judged]))
            if judged else 0.0,
            "configurations": len(configs),
            "configurations_agree": sum(all(r.agrees_with_config for r in rs)
                                        for rs in configs.values()),
            "contradictory_rows": [r.id for r in h2h if r.config_verdict == CONTRADICTORY],
            "inconclusive_rows": [r.id for r in h2h if r not in firm],
            "median_point_agreement": float(np.mean(point)) if point else 0.0,
            "ratio_median_abs_error": float(np.median(
                [abs(r.ratio[0] / float(r.ratio_published or 1.0) - 1) for r in h2h]))
            if h2h else 0.0,
            "verdict_agreement": float(np.mean([r.agrees for r in h2h])) if h2h else 0.0,
            "median_abs_error": mae, "bare_median_abs_error": bare,
            "coverage": float(np.mean([v.covered for v in values])) if values else None,
            "ratio_coverage": float(np.mean([r.ratio_measurement[1] <= (r.ratio_published or 0)
                                             <= r.ratio_measurement[2] for r in h2h]))
            if h2h else 0.0,
            "goals": {"verdict_agreement": GOAL_AGREEMENT, "median_abs_error": GOAL,
                      "coverage": GOAL_COVERAGE},
            "out_of_scope": [r.id for r in assessed if not r.in_scope],
            "at_scale": at_scale(assessed)}

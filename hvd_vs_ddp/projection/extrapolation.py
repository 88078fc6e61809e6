"""The model's error by extrapolation: how far past what was measured a band still holds.

Leave one source out (against_published.py) measures interpolation: each source's rows
sit among similar rows of other sources. A user has one node (or one device's compute
time) and asks about many. This module judges every published value as that user would
get it:
- each study's rows of one configuration (CONFIG_FIELDS but the sizes) are a group; the
  group's rows at <= 1 node (else <= 16 devices) are what a user would have measured.
  The largest such size is the base: the model is calibrated there (the published value
  over the model's median, as `hvd-vs-ddp project RUN` carries a run's residual) and the
  group's larger rows are predicted from it: the residual is log(published / calibrated
  projection) and the scale factor is devices / base devices;
- every other value (a calibration row itself, or a group with no row that small) is
  predicted from the one device whose compute time it carries (as `project
  --compute-ms`): the residual is the plain one, the scale factor the devices.
Nothing is set aside: the scaling losses no term explains (NVIDIA's TF2 BERT on DGX-2H,
Bagua's VGG16 over 100 GbE) are in the residuals (docs/projection.md, 'Bands by
extrapolation').

The error model (`fit`): the model's error grows with log2 of the scale factor,
sd(s) = hypot(base, g * log2(s)), where `base` is the split of errors.py (no growth) and
g, per key, comes from the scores |residual| / log2(s), net of what the band already
carries. A library's g is calibrated on the studies, not the rows (`_growth`): the larger
of the rows' conformal 95% quantile and the widest study's own 95th percentile, over
1.96, so a band of 1.96 sd(s) holds 95% of every study's values at every scale, the
one study whose losses no term explains (Bagua's VGG16 over 100 GbE TCP) included. The
rows' 95th percentile alone ("rows", kept for comparison) is too narrow: the many small
residuals of the quiet studies outnumber Bagua's, and its bands miss a third of them. A
library's g is never below the two libraries' pooled g (thin data borrow the wider), and
the ratio's g (the rows' percentile, `fit`) falls back to the pooled one under MIN_FIT
residuals.

`python -m hvd_vs_ddp.projection.extrapolation` prints each study's own growth and, per
key and scale-factor band (2-8x, 8-64x, >= 64x), the share of published values inside the
95% band with its binomial interval, with no growth, with the "rows" growth and with the
"sources" one, four ways (HOLDS): nothing held out (every published value against the band
`project` carries: its calibration), held out by row (a jackknife), by source and by
cluster (interconnect and GPU generation). Held out by source or cluster, Bagua's values
are missed whatever the method: no other study loses more than 0.03 per doubling where it
loses 0.20, so no fit without it reaches it; with K studies a new one exceeds the widest
with chance 1/(K+1) (1/7 here). Bands with fewer than MIN_CLAIM values are too few to
claim a coverage (DDP past 64x: one).

    python -m hvd_vs_ddp.projection.extrapolation            # the tables
    python -m hvd_vs_ddp.projection.extrapolation --markdown # as docs/projection.md has it
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import Callable, NamedTuple

import numpy as np
from scipy.stats import binomtest

from hvd_vs_ddp.projection.errors import KEYS, Residual, model_error
from hvd_vs_ddp.projection.model import ModelError
from hvd_vs_ddp.projection.published_rows import CONFIG_FIELDS, DRAWS, Row, project_all

Z = 1.96             # a 95% band's half-width in standard deviations
QUANTILE = 0.95      # of |residual| / log2(scale): the growth a band must carry
MIN_FIT = 8          # fewer residuals of a key: its growth is the libraries' pooled one
CALIBRATE_UP_TO = 16  # devices: where a study has no one-node row, what a user has
BANDS = (("2-8x", 2.0, 8.0), ("8-64x", 8.0, 64.0), (">=64x", 64.0, math.inf))
LIBS = ("ddp", "horovod")
GOAL_BAND_COVERAGE = 0.90
MIN_CLAIM = 10       # fewer values in a scale band: too few to claim its coverage
METHODS = ("rows", "sources")   # _growth's: the rows' percentile, and the one in use
HOLDS = ("none", "row", "source", "cluster")
_F = {name: i for i, name in enumerate(CONFIG_FIELDS)}
_GPU = {"nvlink2": "V100", "nvlink3": "A100", "nvlink4": "H100", "pcie3": "P100"}


class Extrapolated(NamedTuple):
    source: str
    key: str            # "ddp", "horovod" or "ratio"
    cluster: str        # interconnects and GPU generation
    devices: int
    measured: int       # devices the prediction starts from (1: compute time alone)
    value: float        # log(published / predicted median)
    input_var: float    # the variance of the log of the row's own draws
    row: str

    @property
    def scale(self) -> float:
        return self.devices / self.measured


def cluster(config: tuple) -> str:
    intra = config[_F["intra"]]
    return f"{_GPU.get(intra, intra)} {intra} / {config[_F['inter']] or 'one node'}"


def _group(config: tuple) -> tuple:
    return tuple(x for k, x in zip(CONFIG_FIELDS, config) if k not in ("devices", "batch"))


def _logs(r: Row) -> list[tuple[str, float, float]]:
    """(key, log(published / projected median), variance of the log draws) of a row."""
    out = [(v.library, float(np.log(v.published / v.bare)), float(np.log(v.draws).var()))
           for v in r.values]
    if r.ratio_draws is not None and r.ratio_published:
        out.append(("ratio", float(np.log(r.ratio_published / np.median(r.ratio_draws))),
                    float(np.log(r.ratio_draws).var())))
    return out


def residuals(projected: tuple[Row, ...]) -> list[Extrapolated]:
    """Every in-scope published value predicted from what a user would have measured
    (module docstring), with its scale factor."""
    rows = [r for r in projected if r.in_scope]
    base: dict[tuple, dict[int, list[float]]] = {}
    for r in rows:
        for key, e, _ in _logs(r):
            base.setdefault((_group(r.config), key), {}).setdefault(r.devices, []).append(e)
    out = []
    for r in rows:
        per_node = int(r.config[_F["per_node"]] or 1)
        for key, e, var in _logs(r):
            sizes = base[(_group(r.config), key)]
            small = [n for n in sizes if n <= per_node] or \
                [n for n in sizes if n <= CALIBRATE_UP_TO]
            ref = max(small, default=0)
            if ref and r.devices > ref:  # calibrated on the group's own one-node rows
                out.append(Extrapolated(r.source, key, cluster(r.config), r.devices, ref,
                                        e - float(np.mean(sizes[ref])), var, r.id))
            elif r.devices > 1:           # from the one device's compute time
                out.append(Extrapolated(r.source, key, cluster(r.config), r.devices, 1, e,
                                        var, r.id))
    return out


def _scores(rs: list[Extrapolated], base: ModelError) -> dict[str, list[float]]:
    """Per source, |residual| / log2(s) of its residuals at s >= 2, each net of what the
    band already carries (the row's draws, errors.py's model error and noise)."""
    out: dict[str, list[float]] = {}
    for r in rs:
        if r.scale >= 2:
            out.setdefault(r.source, []).append(
                math.sqrt(max(0.0, r.value ** 2 - r.input_var - base.sd(r.key) ** 2))
                / math.log2(r.scale))
    return out


def _growth(rs: list[Extrapolated], base: ModelError, method: str = "sources") -> float | None:
    """g (the sd's growth per doubling) from the residuals' scores (`_scores`), over Z:
    - "rows" (for comparison): the rows' 95th percentile;
    - "sources" (in use): the larger of the rows' conformal quantile (the
      ceil((n + 1) 0.95)-th smallest score: a finite-sample 95% bound for a new row
      exchangeable with them) and the widest source's own 95th percentile. Rows of one
      study share its cluster, software and reader, so they are not exchangeable with
      another study's: the units are the sources, and with K < 19 of them the 95%
      conformal quantile over sources is their largest (a new study exceeds the widest
      of K with chance 1/(K+1)). A band then holds 95% of every study's own values, not
      only of the pooled rows, which the many small residuals of the quiet studies (the
      PyTorch DDP README's, NVIDIA's DGX A100 rows) outnumber."""
    if method not in METHODS:
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    by = _scores(rs, base)
    x = sorted(v for vs in by.values() for v in vs)
    if not x:
        return None
    if method == "rows":
        return float(np.quantile(x, QUANTILE)) / Z
    k = min(len(x), math.ceil((len(x) + 1) * QUANTILE))
    widest = max(float(np.quantile(vs, QUANTILE)) for vs in by.values())
    return max(x[k - 1], widest) / Z


def _widest(rs: list[Extrapolated], base: ModelError) -> str:
    """The study with the largest own 95th-percentile score (`_growth`'s "sources")."""
    by = _scores(rs, base)
    return max(by, key=lambda s: float(np.quantile(by[s], QUANTILE))) if by else ""


def fit(res: list[Extrapolated], keep: Callable[[Extrapolated], bool] = lambda r: True,
        base: ModelError | None = None, method: str = "sources") -> ModelError:
    """The error a projection carries at scale factor s: `base` (errors.py's split,
    constant) with g[key] * log2(s) added in quadrature, g from the residuals `keep`
    admits, net of `base` (module docstring); `method`: `_growth`'s, for the
    libraries. The ratio keeps the rows' percentile: its residuals past 2x come from two
    studies (Bagua's and CSC's), held out by source its bands hold every published
    ratio, and the widest study's (Bagua's, 0.030 per doubling over 1.96) would take
    the firm verdicts from 15 to 9 with no published ratio to gain (docs/projection.md,
    'Bands by extrapolation')."""
    kept = [r for r in res if keep(r)]
    b = base or ModelError({k: 0.0 for k in KEYS}, {k: 0.0 for k in KEYS},
                           {k: 0 for k in KEYS})
    pooled = _growth([r for r in kept if r.key in LIBS], b, method) or 0.0
    growth, rows = {}, {}
    for key in KEYS:
        mine = [r for r in kept if r.key == key]
        own = _growth(mine, b, method if key in LIBS else "rows") \
            if len(mine) >= MIN_FIT else None
        growth[key] = pooled if own is None else (max(own, pooled) if key in LIBS else own)
        rows[key] = len(mine)
    return ModelError(dict(b.model), dict(b.noise), dict(b.n), dict(b.total),
                      dict(b.inputs), growth=growth, growth_rows=rows,
                      growth_sources=len({r.source for r in kept}),
                      growth_widest=_widest([r for r in kept if r.key in LIBS], b)
                      if method == "sources" else "")


def _plain(projected: tuple[Row, ...]) -> list[Residual]:
    from hvd_vs_ddp.projection.errors import published_residuals as plain
    return plain(projected)


def current(draws: int = DRAWS) -> ModelError:
    """What a new projection carries: errors.py's split from every source, and the growth
    from every source's extrapolation residuals."""
    projected = project_all(draws)
    return fit(residuals(projected), base=model_error(_plain(projected)))


def _keep(hold: str, r: Extrapolated) -> Callable[[Extrapolated], bool]:
    """The residuals a fit may use when `r` is judged, held out by `hold` (HOLDS)."""
    if hold == "none":
        return lambda x: True
    if hold == "row":
        return lambda x: x is not r
    if hold == "source":
        return lambda x: x.source != r.source
    return lambda x: x.cluster != r.cluster


class Judged(NamedTuple):
    r: Extrapolated
    before: float     # band half-width (log, 95%): the interpolation error, constant
    first: float      # with the growth as "rows" fits it
    after: float      # with the growth as "sources" fits it (the one in use)


def judged(draws: int = DRAWS, hold: str = "source") -> list[Judged]:
    """Each residual with its band's half-width (log, 95%) before (the leave-one-source-
    out error, constant in the scale), with the "rows" growth and with the "sources" one,
    the growth fitted without the residual's own source (`hold` "source"), cluster
    ("cluster") or the residual alone ("row": a jackknife, rows taken as exchangeable),
    or from every residual ("none": the bands as `project` carries them; the base is then
    errors.py's split from every source)."""
    if hold not in HOLDS:
        raise ValueError(f"hold {hold!r}: expected one of {', '.join(HOLDS)}")
    projected = project_all(draws)
    res, plain = residuals(projected), _plain(projected)
    everyone = model_error(plain)
    by_source = {s: model_error(plain, leave_out=s) for s in {r.source for r in res}}
    fits: dict[object, tuple[ModelError, ModelError]] = {}
    out = []
    for i, r in enumerate(res):
        before = everyone if hold == "none" else by_source[r.source]
        held: object = {"none": None, "row": ("row", i), "source": r.source,
                        "cluster": r.cluster}[hold]
        if held not in fits:
            keep = _keep(hold, r)
            fits[held] = (fit(res, keep, before, "rows"), fit(res, keep, before))
        first, now = fits[held]
        out.append(Judged(r, *(Z * math.sqrt(r.input_var + me.sd(r.key, scale=s) ** 2)
                               for me, s in ((before, 1.0), (first, r.scale),
                                             (now, r.scale)))))
    return out


def _share(k: int, n: int) -> str:
    if not n:
        return "none"
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{k / n:.0%} [{ci.low:.0%}-{ci.high:.0%}]"


def table(j: list[Judged]) -> list[dict]:
    """Per key and scale-factor band: residuals, sources, median and worst |error|, and
    the share inside the band with no growth, with the "rows" growth and with the
    "sources" one (each with a 95% binomial interval: `interval`)."""
    out = []
    for key in KEYS:
        for name, lo, hi in BANDS:
            xs = [x for x in j if x.r.key == key and lo <= x.r.scale < hi]
            err = [abs(math.exp(-x.r.value) - 1) for x in xs]
            out.append({"key": key, "band": name, "n": len(xs),
                        "sources": len({x.r.source for x in xs}),
                        "median_error": float(np.median(err)) if err else None,
                        "worst_error": max(err) if err else None,
                        "before": sum(abs(x.r.value) <= x.before for x in xs),
                        "first": sum(abs(x.r.value) <= x.first for x in xs),
                        "after": sum(abs(x.r.value) <= x.after for x in xs),
                        "missed": sorted({x.r.source for x in xs
                                          if abs(x.r.value) > x.after}),
                        "half_width_after": float(np.median([x.after for x in xs]))
                        if xs else None})
    return out


def interval(k: int, n: int) -> tuple[float, float]:
    """The 95% (Wilson) binomial interval of k inside out of n."""
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


HOW = {"none": "nothing held out: every published value against the band `project` "
               "carries (the growth fitted on every source)",
       "row": "held out by row (a jackknife: the growth fitted without the value itself, "
              "its study's other rows in)",
       "source": "held out by source (the growth and the base fitted without the value's "
                 "study)",
       "cluster": "held out by cluster (the growth fitted without the value's interconnect "
                  "and GPU generation)"}


def markdown(rows: list[dict], how: str) -> str:
    lines = [f"{HOW.get(how, how)}; 95% bands; error = predicted / published - 1; share of "
             "published values inside the band, with its 95% binomial interval (under "
             f"{MIN_CLAIM} values: too few to claim a coverage):", "",
             "| key | scale factor | values | sources | median error | worst | inside, no "
             "growth | inside, first growth fit | inside now | now: half-width (log) | "
             "outside now |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | --- |"]
    for t in rows:
        if not t["n"]:
            lines.append(f"| {t['key']} | {t['band']} | 0 | 0 | | | none | none | none | | |")
            continue
        few = " (too few)" if t["n"] < MIN_CLAIM else ""
        lines.append(f"| {t['key']} | {t['band']} | {t['n']} | {t['sources']} | "
                     f"{t['median_error']:.1%} | {t['worst_error']:.1%} | "
                     f"{_share(t['before'], t['n'])} | {_share(t['first'], t['n'])} | "
                     f"{_share(t['after'], t['n'])}{few} | {t['half_width_after']:.3f} | "
                     f"{t['n'] - t['after']}"
                     + (f": {', '.join(s.split()[0] for s in t['missed'])}"
                        if t["missed"] else "") + " |")
    return "\n".join(lines)


def sources_line(draws: int = DRAWS) -> str:
    """Each study's own growth (the 95th percentile of its scores, libraries pooled, per
    doubling; g = this over 1.96): how far apart the studies are."""
    projected = project_all(draws)
    res = residuals(projected)
    by = _scores([r for r in res if r.key in LIBS], model_error(_plain(projected)))
    return ("each study's |log residual| per doubling of the scale factor, net of the "
            "base (95th percentile of its values; g = this / 1.96): " + "; ".join(
                f"{s} {np.quantile(v, QUANTILE):.3f} ({len(v)})"
                for s, v in sorted(by.items(), key=lambda kv: -np.quantile(kv[1], QUANTILE))))


def growth_line(me: ModelError) -> str:
    """What a band carries, in words (project's note, the report)."""
    return ("model error grows with the scale factor (devices projected / devices "
            "measured; 1 measured for a compute time alone): sd(s) = hypot(base, g log2 s) "
            "with g " + ", ".join(f"{k} {me.growth.get(k, 0.0):.1%}" for k in KEYS)
            + f" per doubling, from {sum(me.growth_rows.values())} extrapolation residuals "
            f"of {me.growth_sources} sources"
            + (f"; the libraries' g holds the widest study's own 95th percentile "
               f"({me.growth_widest}), so a new study as lossy as it is held, a lossier "
               "one not" if me.growth_widest else "")
            + " (python -m hvd_vs_ddp.projection.extrapolation)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.projection.extrapolation",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--draws", type=int, default=DRAWS)
    args = ap.parse_args(argv)
    if not args.markdown:
        for x in judged(args.draws):
            r = x.r
            print(f"{r.row:48s} {r.key:8s} {r.devices:4d} from {r.measured:3d} "
                  f"({r.scale:5.1f}x) error {math.exp(-r.value) - 1:+.1%} band +-{x.after:.3f}")
    print(growth_line(current(args.draws)) + "\n")
    print(sources_line(args.draws) + "\n")
    for hold in HOLDS:
        print(markdown(table(judged(args.draws, hold)), hold) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The model's error by extrapolation: how far past what was measured a band still holds.

Leave one source out (against_published.py) measures interpolation: each source's rows
sit among similar rows of other sources. A user has one node (or one device's compute
time) and asks about many. This module judges every published value as that user would
get it (issue 62):
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
g, per key, is the 95th percentile of |residual| / log2(s) over 1.96: a band of
1.96 sd(s) then holds 95% of the residuals it was fitted on at every scale. It is
conservative by construction: a library's g is never below the two libraries' pooled g
(thin data borrow the wider), and the ratio's g falls back to the pooled one under
MIN_FIT residuals. `python -m hvd_vs_ddp.projection.extrapolation` prints the residuals'
error and the bands' coverage per scale-factor band, before (today's bands: the
leave-one-source-out error, constant in the scale) and after, each with a 95% binomial
interval, held out by source and by cluster (interconnect and GPU generation):

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


def _growth(rs: list[Extrapolated], base: ModelError) -> float | None:
    """The 95th percentile of |residual| / log2(s) over 1.96, each residual net of what
    the band already carries (the row's draws, errors.py's model error and noise)."""
    x = [math.sqrt(max(0.0, r.value ** 2 - r.input_var - base.sd(r.key) ** 2))
         / math.log2(r.scale) for r in rs if r.scale >= 2]
    return float(np.quantile(x, QUANTILE)) / Z if x else None


def fit(res: list[Extrapolated], keep: Callable[[Extrapolated], bool] = lambda r: True,
        base: ModelError | None = None) -> ModelError:
    """The error a projection carries at scale factor s: `base` (errors.py's split,
    constant) with g[key] * log2(s) added in quadrature, g from the residuals `keep`
    admits, net of `base` (module docstring)."""
    kept = [r for r in res if keep(r)]
    b = base or ModelError({k: 0.0 for k in KEYS}, {k: 0.0 for k in KEYS},
                           {k: 0 for k in KEYS})
    pooled = _growth([r for r in kept if r.key in LIBS], b) or 0.0
    growth, rows = {}, {}
    for key in KEYS:
        mine = [r for r in kept if r.key == key]
        own = _growth(mine, b) if len(mine) >= MIN_FIT else None
        growth[key] = pooled if own is None else (max(own, pooled) if key in LIBS else own)
        rows[key] = len(mine)
    return ModelError(dict(b.model), dict(b.noise), dict(b.n), dict(b.total),
                      dict(b.inputs), growth=growth, growth_rows=rows,
                      growth_sources=len({r.source for r in kept}))


def _plain(projected: tuple[Row, ...]) -> list[Residual]:
    from hvd_vs_ddp.projection.errors import published_residuals as plain
    return plain(projected)


def current(draws: int = DRAWS) -> ModelError:
    """What a new projection carries: errors.py's split from every source, and the growth
    from every source's extrapolation residuals."""
    projected = project_all(draws)
    return fit(residuals(projected), base=model_error(_plain(projected)))


def _without(held: str, hold: str) -> Callable[[Extrapolated], bool]:
    return lambda x: (x.source if hold == "source" else x.cluster) != held


def judged(draws: int = DRAWS, hold: str = "source") -> list[tuple[Extrapolated, float, float]]:
    """Each residual with its band's half-width (log, 95%) before (the leave-one-source-
    out error of today, constant) and after (with the growth), each fitted without the
    residual's own source (`hold` "source") or cluster ("cluster")."""
    projected = project_all(draws)
    res, plain = residuals(projected), _plain(projected)
    by_source = {s: model_error(plain, leave_out=s) for s in {r.source for r in res}}
    fits: dict[str, ModelError] = {}
    out = []
    for r in res:
        held = r.source if hold == "source" else r.cluster
        before = by_source[r.source]
        if held not in fits:
            fits[held] = fit(res, _without(held, hold), before)
        sd0 = before.sd(r.key)
        sd1 = fits[held].sd(r.key, scale=r.scale)
        out.append((r, Z * math.sqrt(r.input_var + sd0 ** 2),
                    Z * math.sqrt(r.input_var + sd1 ** 2)))
    return out


def _share(k: int, n: int) -> str:
    if not n:
        return "none"
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{k / n:.0%} [{ci.low:.0%}-{ci.high:.0%}]"


def table(j: list[tuple[Extrapolated, float, float]]) -> list[dict]:
    """Per key and scale-factor band: residuals, sources, median and worst |error|, and
    the share inside the band before and after (with a 95% binomial interval)."""
    out = []
    for key in KEYS:
        for name, lo, hi in BANDS:
            xs = [(r, b, a) for r, b, a in j if r.key == key and lo <= r.scale < hi]
            err = [abs(math.exp(-r.value) - 1) for r, _, _ in xs]
            out.append({"key": key, "band": name, "n": len(xs),
                        "sources": len({r.source for r, _, _ in xs}),
                        "median_error": float(np.median(err)) if err else None,
                        "worst_error": max(err) if err else None,
                        "before": sum(abs(r.value) <= b for r, b, _ in xs),
                        "after": sum(abs(r.value) <= a for r, _, a in xs),
                        "half_width_after": float(np.median([a for _, _, a in xs]))
                        if xs else None})
    return out


def markdown(rows: list[dict], how: str) -> str:
    lines = [f"Held out by {how} (95% bands; error = predicted / published - 1; share "
             "of published values inside the band, with its 95% binomial interval):", "",
             "| key | scale factor | values | sources | median error | worst | inside "
             "before (today's bands) | inside after | after: band half-width (log) |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: |"]
    for t in rows:
        if not t["n"]:
            lines.append(f"| {t['key']} | {t['band']} | 0 | 0 | | | none | none | |")
            continue
        lines.append(f"| {t['key']} | {t['band']} | {t['n']} | {t['sources']} | "
                     f"{t['median_error']:.1%} | {t['worst_error']:.1%} | "
                     f"{_share(t['before'], t['n'])} | {_share(t['after'], t['n'])} | "
                     f"{t['half_width_after']:.3f} |")
    return "\n".join(lines)


def growth_line(me: ModelError) -> str:
    """What a band carries, in words (project's note, the report)."""
    return ("model error grows with the scale factor (devices projected / devices "
            "measured; 1 measured for a compute time alone): sd(s) = hypot(base, g log2 s) "
            "with g " + ", ".join(f"{k} {me.growth.get(k, 0.0):.1%}" for k in KEYS)
            + f" per doubling, from {sum(me.growth_rows.values())} extrapolation residuals "
            f"of {me.growth_sources} sources (python -m hvd_vs_ddp.projection.extrapolation)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.projection.extrapolation",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--draws", type=int, default=DRAWS)
    args = ap.parse_args(argv)
    if not args.markdown:
        for r, _, a in judged(args.draws):
            print(f"{r.row:48s} {r.key:8s} {r.devices:4d} from {r.measured:3d} "
                  f"({r.scale:5.1f}x) error {math.exp(-r.value) - 1:+.1%} band +-{a:.3f}")
    print(growth_line(current(args.draws)) + "\n")
    for hold in ("source", "cluster"):
        print(markdown(table(judged(args.draws, hold)), hold) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The projection held to a link of a set rate: fit on a run's loopback cells, predict its
cells across emulated hosts, and say how far each prediction lies from what was measured.

A CPU target over a TCP link of a given rate, a mode of its own: nothing here adds a
CPU-to-GPU distance. Per run, workload and library series at 2 ranks, from the loopback
cell (step L) and the compute-only cell (the same per-rank step with no communication,
2 processes at once: C), a cell across a link of rate R is predicted as

    wire  = ring bytes x 8 / (R x f)        ring bytes: the model's gradient bytes x
                                            2(n-1)/n (the cell's own record); f: the share
                                            of the rate TCP reaches on the veth, measured
                                            (hvd_vs_ddp/links/sweep.py; docs/links.md)
    O     = max(0, L - C)                   what the library exposes on loopback (its
                                            own work and the loopback transfer)
    high  = C + O + wire                    nothing overlaps: the link's time adds whole
    low   = C + max(O, wire - B)            the link hides behind backward (B = 2/3 C,
                                            backward's usual share of a step) and
                                            replaces the loopback transfer
    point = (low + high) / 2

(The first form, low = C + O + max(0, wire - B), left out that the loopback cost O is
mostly the loopback transfer, which the link replaces: on the first links run, DDP's
resnet50 step at 500mbit, 1.88 s, lay below its low end, 2.03 s.)

and the Horovod/DDP ratio (samples/s, > 1: Horovod faster) as DDP's step over
Horovod's, its band from the two sides' replicates (DDP's low over Horovod's high to
DDP's high over Horovod's low, the same percentiles). Each cell's measured median step
and each pair's measured ratio (with its 95% interval, the run model's) are held
against them: the step's relative error and whether the measured ratio lies in the band.

The band is a prediction interval for the measured cell, not the model's range alone: L
and C are medians of a few repetitions, and the measured cell is one more draw of the
same kind of process. So L and C are resampled (the two-level bootstrap of their
repetitions and steps, hvd_vs_ddp/run_model/stats.py), low and high computed per
replicate, each replicate multiplied by the spread of one more measurement (an
independent replicate of L's own, as a share of L), and the band runs from the 2.5th
percentile of low to the 97.5th of high. A series recorded without its repetitions'
steps keeps the model's range alone.

    python -m hvd_vs_ddp.projection.links RUN_DIR [--efficiency 0.955] [--sweep S.json]

The same model predicts every 2-rank loopback series of a run at rates it never ran
(`at_rates`, `predicted_pairs`): `hvd-vs-ddp project RUN --link-rate 1gbit,500mbit`
(hvd_vs_ddp/projection/link_target.py). The model's gradient bytes are what the run's
cells across a link recorded, else the workload's layout (hvd_vs_ddp/projection/layout.py).
"""
from __future__ import annotations

import argparse
import json
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import DDP, HOROVOD_LIB
from hvd_vs_ddp.links import rates
from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.frames import Data
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN, FASTER, classify

# TCP's share of the rate on this machine's veth, 100 Mbit/s to 8 Gbit/s: 0.952-0.958
# (python -m hvd_vs_ddp.links.sweep, 2026-12-06; docs/links.md)
MEASURED_EFFICIENCY = 0.955
BACKWARD_SHARE = 2 / 3  # backward's part of a training step's compute (about twice forward)
LOOPBACK = rates.LOOPBACK
TAIL = (1 - stats.LEVEL) / 2 * 100  # each end of the band: the 2.5th / 97.5th percentile


@dataclass(frozen=True)
class Predicted:
    low: float
    point: float
    high: float


def predict(loopback_s: float, compute_s: float, ring_bytes: float, link: str,
            efficiency: float = MEASURED_EFFICIENCY) -> Predicted:
    """A step across `link` from the loopback step and the compute-only step (see the
    module docstring)."""
    low, high = _bounds(loopback_s, compute_s, rates.transfer_seconds(ring_bytes, link,
                                                                       efficiency))
    return Predicted(float(low), float(low + high) / 2, float(high))


def _bounds(loopback_s, compute_s, wire: float):
    """The low and high ends (module docstring), elementwise: scalars or arrays of
    replicates."""
    own = np.maximum(0.0, loopback_s - compute_s)
    return compute_s + np.maximum(own, wire - BACKWARD_SHARE * compute_s), \
        compute_s + own + wire


def medians_drawn(reps: list, key: str, n: int = stats.N_RESAMPLES) -> np.ndarray:
    """n bootstrap replicates of a series' median step (seconds) from its repetitions'
    steps (the two-level bootstrap of run_model/stats.py), seeded by `key`: the same
    series always gets the same replicates. One repetition: its steps alone."""
    rng = np.random.default_rng([stats.SEED, zlib.crc32(key.encode())])
    return np.exp(stats.boot_medians(reps, rng, n))


@dataclass(frozen=True)
class Band:
    """A prediction at one rate: the model at the measured medians, and its band's
    replicates (low and high ends, the inputs resampled and one more measurement's
    spread applied)."""
    at: Predicted
    low_draws: np.ndarray
    high_draws: np.ndarray

    @property
    def lo(self) -> float:
        return float(np.percentile(self.low_draws, TAIL))

    @property
    def hi(self) -> float:
        return float(np.percentile(self.high_draws, 100 - TAIL))


def band(loop_reps: list | None, loopback_s: float, compute_reps: list | None,
         compute_s: float, ring_bytes: float, link: str, keys: tuple[str, str],
         efficiency: float = MEASURED_EFFICIENCY) -> Band:
    """The prediction across `link` with its band (module docstring). Without the
    repetitions' steps of either input, the band is the model's range alone. keys: the
    loopback series' and the compute-only cell's; the series of one pair share the
    compute-only cell, so they share its replicates too (its uncertainty moves both
    sides' steps, not their ratio)."""
    at = predict(loopback_s, compute_s, ring_bytes, link, efficiency)
    if not loop_reps or not compute_reps:
        return Band(at, np.array([at.low]), np.array([at.high]))
    wire = rates.transfer_seconds(ring_bytes, link, efficiency)
    loop = medians_drawn(loop_reps, keys[0])
    comp = medians_drawn(compute_reps, keys[1])
    again = medians_drawn(loop_reps, keys[0] + f"/{link}") / loopback_s  # one more measurement
    low, high = _bounds(loop, comp, wire)
    return Band(at, low * again, high * again)


def _reps(x) -> list | None:
    """A row's repetitions' steps as lists of floats; None where the row has none."""
    if not isinstance(x, (list, tuple)) or not x:
        return None
    out = [[float(v) for v in np.asarray(r, float).ravel() if np.isfinite(v) and v > 0]
           for r in x]
    return out if all(out) else None


def _row(r: pd.Series, loop: pd.Series, data: Data, ring: float, link: str, case: str,
         measured: float, efficiency: float) -> dict | None:
    """One predicted cell: the loopback row `loop` carried across `link`, with the
    measured step beside it (NaN where none)."""
    compute, compute_reps = compute_of(data, r)
    if np.isnan(compute):
        return None
    loopback = float(loop["step_median"])
    keys = (f"{loop['run']}/{loop['case']}/{loop['series']}",
            f"{r['run']}/{r['workload']}/{r['per_rank_batch']}/{r['input_mode']}")
    b = band(_reps(loop.get("rep_steps")), loopback, compute_reps, compute, ring, link,
             keys, efficiency)
    seen = not np.isnan(measured)
    return {"run": r["run"], "workload": case, "series": r["series"],
            "library": r["library"], "link": link, "rate_bps": rates.bits_per_s(link),
            "world_size": int(r["world_size"]), "loopback_s": loopback,
            "compute_s": compute, "wire_s": rates.transfer_seconds(ring, link, efficiency),
            "low_s": b.at.low, "point_s": b.at.point, "high_s": b.at.high,
            "band_lo_s": b.lo, "band_hi_s": b.hi, "low_draws": b.low_draws,
            "high_draws": b.high_draws, "measured_s": measured,
            "error": b.at.point / measured - 1 if seen else np.nan,
            "within": bool(b.lo <= measured <= b.hi) if seen else None}


def _base(case: str, link: str) -> str:
    return case.replace(f" [link {link}]", "")


def compute_of(data: Data, r: pd.Series) -> tuple[float, list | None]:
    """The compute-only step of a throughput row's case (its median, measured with as
    many processes at once as the row's ranks where the run has it) and the steps of each
    of its repetitions (None where it has none)."""
    co = data.compute_only
    if co.empty:
        return np.nan, None
    same = co[(co["run"] == r["run"]) & (co["workload"] == r["workload"])
              & (co["per_rank_batch"] == r["per_rank_batch"])
              & (co["input_mode"] == r["input_mode"])]
    concurrent = same[same["ranks"] == r["world_size"]]
    pick = concurrent if not concurrent.empty else same
    if pick.empty:
        return np.nan, None
    return float(np.median(np.concatenate(list(pick["steps"])))), _reps(list(pick["steps"]))


def cells(data: Data, efficiency: float = MEASURED_EFFICIENCY) -> pd.DataFrame:
    """Every cell across a link with its prediction from the same run's loopback cells."""
    tp = data.throughput
    if tp.empty or "link" not in tp:
        return pd.DataFrame()
    tp = tp[tp["world_size"] > 1]
    rows = []
    for _, r in tp[link_column(tp) != LOOPBACK].iterrows():
        link = r["link"]
        base = _base(r["case"], link)
        loop = tp[(tp["run"] == r["run"]) & (tp["case"] == base) & (tp["series"] == r["series"])
                  & (tp["world_size"] == r["world_size"])]
        wire = r["wire"] if isinstance(r.get("wire"), dict) else {}
        ring = wire.get("ring_bytes")
        if loop.empty or ring is None:
            continue
        row = _row(r, loop.iloc[0], data, float(ring), link, base, float(r["step_median"]),
                   efficiency)
        if row is not None:
            rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["run", "workload", "rate_bps", "series"]).reset_index(drop=True) \
        if not out.empty else out


def pairs(pred: pd.DataFrame, cmp: pd.DataFrame) -> pd.DataFrame:
    """Per Horovod/DDP pair across a link: the predicted ratio's band against the
    measured ratio and its interval (the run model's pairs, `cmp`): the measured ones of
    `predicted_pairs`."""
    if pred.empty or cmp.empty:
        return pd.DataFrame()
    out = predicted_pairs(pred, cmp, DEFAULT_MARGIN)
    return out[out["held"].notna()].reset_index(drop=True) if not out.empty else out


def link_column(tp: pd.DataFrame) -> pd.Series:
    """Each throughput row's link: its rate, or loopback (also where no row crossed one)."""
    return tp["link"].fillna(LOOPBACK) if "link" in tp else pd.Series(LOOPBACK, index=tp.index)


def grad_bytes_of(data: Data, r: pd.Series) -> float:
    """The model's gradient bytes for a throughput row's case: what the run's cells across
    a link recorded for it, else its workload's model at the recorded sizes."""
    tp = data.throughput
    same = tp[(tp["run"] == r["run"]) & (tp["workload"] == r["workload"])
              & (tp["workload_params"] == r["workload_params"]) & (link_column(tp) != LOOPBACK)]
    for w in same.get("wire", pd.Series(dtype=object)):
        if isinstance(w, dict) and w.get("grad_bytes"):
            return float(w["grad_bytes"])
    from hvd_vs_ddp.projection.layout import workload_grad_bytes

    params = r["workload_params"]
    params = json.loads(params) if isinstance(params, str) and params else dict(params or {})
    return float(workload_grad_bytes(r["workload"], params, int(r["per_rank_batch"])))


def at_rates(data: Data, links: tuple[str, ...], efficiency: float = MEASURED_EFFICIENCY,
             grad_bytes=grad_bytes_of) -> pd.DataFrame:
    """Every 2-rank loopback series of Horovod and DDP predicted across each of `links`
    (two hosts, one rank each), with the run's own cell at that link beside it where it
    measured one (measured_s, error, within; NaN and None where not)."""
    tp = data.throughput
    if tp.empty:
        return pd.DataFrame()
    loop = tp[(tp["world_size"] == 2) & (link_column(tp) == LOOPBACK)
              & tp["library"].isin([DDP, HOROVOD_LIB])]
    linked = tp[(tp["world_size"] == 2) & (link_column(tp) != LOOPBACK)]
    sizes: dict[tuple, float] = {}
    rows = []
    for _, r in loop.iterrows():
        key = (r["run"], r["workload"], r["workload_params"], r["per_rank_batch"])
        if key not in sizes:
            sizes[key] = grad_bytes(data, r)
        ring = rates.ring_allreduce_bytes(sizes[key], 2)
        for link in links:
            there = linked[(linked["run"] == r["run"]) & (linked["series"] == r["series"])
                           & (linked["case"] == f"{r['case']} [link {link}]")]
            measured = float(there["step_median"].iloc[0]) if not there.empty else np.nan
            row = _row(r, r, data, ring, link, r["case"], measured, efficiency)
            if row is not None:
                rows.append({**row, "grad_bytes": sizes[key]})
    out = pd.DataFrame(rows)
    return out.sort_values(["run", "workload", "rate_bps", "series"]).reset_index(drop=True) \
        if not out.empty else out


def predicted_pairs(pred: pd.DataFrame, cmp: pd.DataFrame, margin: float) -> pd.DataFrame:
    """Per Horovod/DDP pair and link of `at_rates`: the predicted ratio (samples/s,
    Horovod over DDP) with its band and the verdict the band gives at `margin` (the
    report's words); where the run measured the pair across that link (`cmp`, the run
    model's pairs), the measured ratio, its 95% interval and whether the band held it."""
    rows: list[dict] = []
    if pred.empty:
        return pd.DataFrame(rows)
    for (run, case, link), g in pred.groupby(["run", "workload", "link"], sort=False):
        for _, h in g[g["library"] == HOROVOD_LIB].iterrows():
            for _, d in g[g["library"] == DDP].iterrows():
                lo = float(np.percentile(d["low_draws"] / h["high_draws"], TAIL))
                hi = float(np.percentile(d["high_draws"] / h["low_draws"], 100 - TAIL))
                point = d["point_s"] / h["point_s"]
                v = classify(lo, hi, margin)
                row = {"run": run, "workload": case, "link": link, "rate_bps": h["rate_bps"],
                       "horovod": h["series"], "ddp": d["series"], "predicted": point,
                       "predicted_lo": lo, "predicted_hi": hi, "verdict": v,
                       "faster": (HOROVOD_LIB if point > 1 else DDP) if v == FASTER else "",
                       "measured": np.nan, "measured_lo": np.nan, "measured_hi": np.nan,
                       "held": None}
                if not cmp.empty:
                    m = cmp[(cmp["run"] == run) & (cmp["case"] == f"{case} [link {link}]")
                            & (cmp["horovod"] == h["series"]) & (cmp["ddp"] == d["series"])]
                    if not m.empty:
                        m0 = m.iloc[0]
                        row.update(measured=m0["ratio"], measured_lo=m0["lo"],
                                   measured_hi=m0["hi"], held=bool(lo <= m0["ratio"] <= hi))
                rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["run", "workload", "rate_bps"]).reset_index(drop=True) \
        if not out.empty else out


def efficiency_from_sweep(path: str) -> float:
    """The median share of the rate reached over a sweep's shaped settings below 10
    Gbit/s (above it the CPU, not the filter, sets the pace here: docs/links.md)."""
    rows = json.loads(Path(path).read_text())
    shares = [r["fraction"] for r in rows if r.get("fraction") is not None
              and r.get("rate_bps") and r["rate_bps"] < 10e9]
    if not shares:
        raise ValueError(f"{path}: no shaped setting below 10gbit in the sweep")
    return float(np.median(shares))


def text(pred: pd.DataFrame, held: pd.DataFrame) -> str:
    out = []
    if pred.empty:
        return "no cell across a link with a loopback and a compute-only cell to fit on"
    out.append(f"{'workload':10s} {'link':9s} {'library':16s} {'loopback':>9s} "
               f"{'compute':>8s} {'wire':>7s} {'predicted [band]':>26s} {'measured':>9s} "
               f"{'error':>7s}")
    for _, r in pred.iterrows():
        out.append(f"{r['workload']:10s} {r['link']:9s} {r['series']:16s} "
                   f"{r['loopback_s'] * 1e3:7.0f}ms {r['compute_s'] * 1e3:6.0f}ms "
                   f"{r['wire_s'] * 1e3:5.0f}ms {r['point_s'] * 1e3:7.0f}ms "
                   f"[{r['band_lo_s'] * 1e3:6.0f}-{r['band_hi_s'] * 1e3:6.0f}] "
                   f"{r['measured_s'] * 1e3:7.0f}ms {r['error']:+7.1%}")
    if not held.empty:
        out.append("")
        out.append(f"{'workload':10s} {'link':9s} {'pair':34s} {'predicted [band]':>24s} "
                   f"{'measured [95%]':>24s} held")
        for _, r in held.iterrows():
            out.append(f"{r['workload']:10s} {r['link']:9s} "
                       f"{r['horovod'] + ' / ' + r['ddp']:34s} {r['predicted']:6.3f} "
                       f"[{r['predicted_lo']:.3f}-{r['predicted_hi']:.3f}]     "
                       f"{r['measured']:6.3f} [{r['measured_lo']:.3f}-{r['measured_hi']:.3f}] "
                       f"{'yes' if r['held'] else 'no'}")
        out.append(f"held: {int(held['held'].sum())} of {len(held)} pairs; step error "
                   "per rate (median |error|): " + ", ".join(
                       f"{k} {pred[pred['link'] == k]['error'].abs().median():.0%}"
                       for k in dict.fromkeys(pred["link"])))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--efficiency", type=float, default=None,
                    help=f"TCP's share of the rate (default {MEASURED_EFFICIENCY}, measured)")
    ap.add_argument("--sweep", help="a sweep's JSON (python -m hvd_vs_ddp.links.sweep "
                    "--json): its measured share instead")
    ap.add_argument("--keep-disturbed", action="store_true")
    args = ap.parse_args(argv)
    eff = args.efficiency or (efficiency_from_sweep(args.sweep) if args.sweep
                              else MEASURED_EFFICIENCY)
    data = build_frames([load_judged_run(Path(p), keep=args.keep_disturbed)
                         for p in args.runs])
    pred = cells(data, eff)
    print(f"TCP's share of the rate: {eff:.3f}")
    print(text(pred, pairs(pred, hvd_vs_ddp(data.throughput))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

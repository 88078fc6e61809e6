"""What a configuration costs: device-hours per epoch, price per million samples, energy.

Throughput turns into cost once a device-hour has a price: per throughput cell,
- devices: the devices the cell occupied for its whole run: one per rank (a GPU per
  rank on GPU machines; on a CPU machine a rank, so a "device-hour" is a rank-hour
  there); DataParallel counts the GPUs it drove;
- device-hours per epoch = devices x epoch samples / (samples/s x 3600), with
  `--epoch-samples` (default 1,281,167: ImageNet-1k's training set);
- cost per million samples = price per device-hour x devices x 1e6 / (samples/s x 3600),
  only when `report --price-per-device-hour` is given;
- both with the 95% interval of the cell's median samples/s from the same two-level
  bootstrap as the verdicts (hvd_vs_ddp.run_model.stats: repetitions, then steps), so a cost carries
  run-to-run variation like every other figure;
- energy per sample: NVML's total-energy counter of every rank's GPU over the timed
  rounds (hvd_vs_ddp/harness/monitor.py writes `gpu_energy_j` per rank), summed over ranks and
  divided by the samples those rounds processed; median over repetitions. Where no GPU
  energy was recorded (a CPU machine, a GPU without the counter) the column says so.

    from hvd_vs_ddp.reports.cost import cost_frame, check_price, check_epoch_samples
    cf = cost_frame(data.throughput, data.throughput_reps, price=2.5)
    python -m hvd_vs_ddp.reports.cost RUN_DIR [PRICE]      # prints the table
"""
from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.reports.tables import DASH, Table
from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.frames import POOL_KEY, rep_samples

IMAGENET_1K_TRAIN = 1_281_167
LEVEL_TAIL = (1 - stats.LEVEL) / 2 * 100


def check_price(value: Any) -> float | None:
    """None, or a finite price > 0 (ValueError otherwise)."""
    if value is None:
        return None
    try:
        price = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"--price-per-device-hour {value!r}: expected a number > 0 "
                         "(the price of one device for one hour, e.g. 2.5)") from None
    if not math.isfinite(price) or price <= 0:
        raise ValueError(f"--price-per-device-hour {value!r}: expected a finite number > 0 "
                         "(the price of one device for one hour, e.g. 2.5)")
    return price


def check_epoch_samples(value: Any) -> int:
    """A whole number of samples >= 1 (ValueError otherwise)."""
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--epoch-samples {value!r}: expected a whole number of samples "
                         f">= 1 (default {IMAGENET_1K_TRAIN:,}, ImageNet-1k's training set)")
    return int(text)


def devices(row: pd.Series) -> int:
    """Devices a cell occupied: one per rank; DataParallel's GPUs (at least 1)."""
    meta = row.get("backend_meta")
    if isinstance(meta, dict) and "dp_devices" in meta:
        return max(1, int(meta.get("dp_devices") or 0))
    return int(row["world_size"])


def sps_interval(row: pd.Series) -> tuple[float, float]:
    """95% two-level bootstrap interval of the cell's median samples/s."""
    rng = np.random.default_rng(stats.SEED)
    logs = stats.boot_medians(rep_samples(row), rng)
    lo, hi = np.exp(np.percentile(logs, [LEVEL_TAIL, 100 - LEVEL_TAIL]))
    return float(lo), float(hi)


def energy_per_sample(rep: pd.Series) -> float:
    """Joules per sample of one repetition, NaN where any rank has no GPU energy."""
    mon = rep.get("monitor")
    ranks = mon.get("ranks") if isinstance(mon, dict) else None
    if not ranks:
        return math.nan
    joules = [r.get("gpu_energy_j") for r in ranks]
    if any(j is None for j in joules):
        return math.nan
    samples = float(rep["global_batch"]) * float(rep["n_steps"])
    return float(sum(joules)) / samples if samples > 0 else math.nan


def cost_frame(tp: pd.DataFrame, reps: pd.DataFrame, price: float | None = None,
               epoch_samples: int = IMAGENET_1K_TRAIN) -> pd.DataFrame:
    """One row per throughput cell: devices, samples/s with interval, device-hours per
    epoch and (with a price) cost per million samples, each with its interval; energy."""
    rows: list[dict[str, Any]] = []
    for _, r in tp.iterrows():
        n = devices(r)
        sps = float(r["sps_median"])
        lo, hi = sps_interval(r)
        mine = reps
        if not reps.empty:
            mine = reps[np.logical_and.reduce([reps[k].astype(str) == str(r[k])
                                               for k in POOL_KEY])]
        energy = [e for e in (energy_per_sample(x) for _, x in mine.iterrows())
                  if not math.isnan(e)]
        hours = n * epoch_samples / 3600.0
        row = {"run": r["run"], "case": r["case"], "series": r["series"],
               "world_size": int(r["world_size"]), "devices": n, "sps": sps,
               "sps_lo": lo, "sps_hi": hi, "epoch_samples": epoch_samples,
               "device_hours_epoch": hours / sps, "device_hours_epoch_lo": hours / hi,
               "device_hours_epoch_hi": hours / lo,
               "energy_j_per_sample": float(np.median(energy)) if energy else math.nan}
        if price is not None:
            per_m = price * n * 1e6 / 3600.0
            row.update(price_per_device_hour=price, cost_per_m=per_m / sps,
                       cost_per_m_lo=per_m / hi, cost_per_m_hi=per_m / lo)
        rows.append(row)
    return pd.DataFrame(rows)


def _range(v: float, lo: float, hi: float, fmt: str) -> str:
    return f"{v:{fmt}} [{lo:{fmt}}{DASH}{hi:{fmt}}]"


def cost_table(cf: pd.DataFrame) -> Table:
    priced = "cost_per_m" in cf.columns
    rows = []
    energy = bool(cf["energy_j_per_sample"].notna().any()) if not cf.empty else False
    for _, r in cf.sort_values(["run", "case", "world_size", "series"]).iterrows():
        row = {"run": r["run"], "case": r["case"], "backend": r["series"],
               "world size": r["world_size"], "devices": r["devices"],
               "device-hours per epoch [95%]": _range(r["device_hours_epoch"],
                                                      r["device_hours_epoch_lo"],
                                                      r["device_hours_epoch_hi"], ".3g")}
        if priced:
            row["cost per 1M samples [95%]"] = _range(r["cost_per_m"], r["cost_per_m_lo"],
                                                      r["cost_per_m_hi"], ".3g")
        if energy:
            row["energy per sample (J)"] = ("no GPU energy counter"
                                            if math.isnan(r["energy_j_per_sample"])
                                            else f"{r['energy_j_per_sample']:.3g}")
        rows.append(row)
    epoch = int(cf["epoch_samples"].iloc[0]) if not cf.empty else IMAGENET_1K_TRAIN
    note = (f"Devices: one per rank (a GPU per rank; on a CPU machine a rank), DataParallel's "
            f"GPUs. Device-hours per epoch = devices x {epoch:,} samples (report "
            "--epoch-samples) / (samples/s x 3600). ")
    if priced:
        note += (f"Cost per 1M samples at {cf['price_per_device_hour'].iloc[0]:g} per "
                 "device-hour "
                 "(report --price-per-device-hour). ")
    else:
        note += "Give report --price-per-device-hour P for the cost per million samples. "
    note += ("Samples/s: the throughput table's medians; intervals: the 95% two-level "
             "bootstrap interval of the median samples/s (repetitions, then steps). ")
    note += ("Energy: NVML's total-energy counter of each rank's GPU over the timed rounds, "
             "summed over ranks, per sample; median over repetitions." if energy else
             "Energy per sample: not shown, no cell recorded GPU energy (no GPU, or no "
             "NVML energy counter).")
    return Table("Cost per cell", pd.DataFrame(rows), note)


def records(cf: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows as JSON-ready dicts (verdicts.json's `cost`), NaN as null."""
    def plain(v: Any) -> Any:
        v = v.item() if isinstance(v, np.generic) else v
        return None if isinstance(v, float) and math.isnan(v) else v
    return [{str(k): plain(v) for k, v in r.items()} for _, r in cf.iterrows()]


if __name__ == "__main__":
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames

    run = load_judged_run(sys.argv[1])
    data = build_frames([run])
    price = check_price(sys.argv[2]) if len(sys.argv) > 2 else None
    print(cost_frame(data.throughput, data.throughput_reps, price).to_string())

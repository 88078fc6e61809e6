"""Report table: what each rank holds, per backend and world size.

From the throughput records' memory.param_bytes / grad_bytes / optim_state_bytes
(the largest rank's, hvd_vs_ddp/backends/held_bytes.py) and peak RSS. Each byte column is also
shown as a fraction of the plain-DDP backend's at the same run, case and world size,
so zero's optimizer state (~1/N) and fsdp's parameters (~1/N) read off directly. Also
DataParallel's peak memory per GPU, where it ran on 2 or more.

    from hvd_vs_ddp.reports.memory_table import dp_gpu_table, memory_table
    table = memory_table(tp)      # None when no record carries the byte counts
    dp_gpu_table(tp)              # dp's peak per GPU, where >= 2 GPUs were used
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.reports.tables import Table, human_bytes

HELD = (("param_bytes", "params"), ("grad_bytes", "grads"),
        ("optim_state_bytes", "optimizer state"))
BASELINES = tuple(catalog.names(library=catalog.DDP))  # plain DDP, any transport
NOTE = ("Bytes held by one rank after the timed steps (the largest rank's), and in "
        "brackets the fraction of plain DDP's at the same world size. zero shards the "
        "optimizer state (about 1/N of DDP's), fsdp shards parameters, gradients and "
        "optimizer state (about 1/N each, plus whole-layer gathers during forward and "
        "backward, which peak RSS includes). Horovod has no sharding: like DDP, every "
        "rank holds all parameters, gradients and optimizer state.")


def _baseline(tp: pd.DataFrame, r: pd.Series) -> pd.Series | None:
    for name in BASELINES:
        same = tp[(tp["run"] == r["run"]) & (tp["case"] == r["case"])
                  & (tp["world_size"] == r["world_size"]) & (tp["backend"] == name)]
        if not same.empty:
            return same.iloc[0]
    return None


def _cell(value: float, base: float | None) -> str:
    if pd.isna(value):
        return ""
    text = human_bytes(float(value))
    if base is not None and not pd.isna(base) and base > 0:
        text += f" ({value / base:.2f})"
    return text


def memory_table(tp: pd.DataFrame) -> Table | None:
    if tp.empty or "param_bytes" not in tp or tp["param_bytes"].isna().all():
        return None
    held = tp[tp["param_bytes"].notna()].sort_values(["run", "case", "world_size", "backend"])
    rows = []
    for _, r in held.iterrows():
        base = _baseline(held, r)
        row = {"run": r["run"], "case": r["case"], "backend": r["backend"],
               "world size": r["world_size"]}
        for key, label in HELD:
            row[f"{label} / rank"] = _cell(r[key], None if base is None else base[key])
        row["peak RSS (MB)"] = "" if pd.isna(r["max_rss_mb"]) else f"{r['max_rss_mb']:.0f}"
        if "cuda_max_mb" in r and not pd.isna(r.get("cuda_max_mb", np.nan)):
            row["peak CUDA (MB)"] = f"{r['cuda_max_mb']:.0f}"
        rows.append(row)
    return Table("Memory per rank", pd.DataFrame(rows), NOTE)


def dp_gpu_table(tp: pd.DataFrame) -> Table | None:
    """DataParallel's peak memory per GPU (recorded where >= 2 GPUs were visible)."""
    if tp.empty or "cuda_per_device_mb" not in tp:
        return None
    rows = []
    for _, r in tp.iterrows():
        per = r["cuda_per_device_mb"]
        if not isinstance(per, list) or len(per) < 2:
            continue
        rest = float(np.mean(per[1:]))
        rows.append({"run": r["run"], "case": r["case"], "backend": r["backend"],
                     **{f"GPU {i} peak (MB)": f"{v:.0f}" for i, v in enumerate(per)},
                     "GPU 0 / others": f"{per[0] / rest:.2f}" if rest > 0 else ""})
    if not rows:
        return None
    return Table("DataParallel memory per GPU", pd.DataFrame(rows),
                 "nn.DataParallel keeps the model on GPU 0, scatters inputs from it and "
                 "gathers outputs and gradients there: GPU 0 peaks above the others.")

"""Loaded runs -> tidy pandas DataFrames, one per result kind, plus one of cells.

Medians and IQRs are computed here from the raw per-step values (never copied from
the summary fields of the JSON), so every table and figure shows the same numbers.

    from reports.frames import build_frames
    data = build_frames([load_run(p) for p in run_dirs])
    data.throughput[["label", "world_size", "sps_median"]]
    python -m reports.frames RUN_DIR...       # prints the throughput frame
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reports import stats
from reports.load import Run, load_run
from reports.theme import backend_label

# Cells that measure the same thing (Horovod vs DDP is compared inside one group).
CASE_KEY = ["run", "workload", "workload_params", "per_rank_batch", "knob_set", "knobs"]


def _json(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=str)


def _flat(x: Any) -> np.ndarray:
    return np.asarray([v for row in x for v in (row if isinstance(row, list) else [row])],
                      dtype=float)


@dataclass
class Data:
    runs: list[Run]
    cells: pd.DataFrame
    throughput: pd.DataFrame
    compute_only: pd.DataFrame
    convergence: pd.DataFrame
    tta: pd.DataFrame
    collective: pd.DataFrame
    memcpy: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _common(run: Run, cell, info: dict) -> dict[str, Any]:
    meta = info.get("backend_meta") or {}
    backend = info.get("backend", "")
    return {"run": run.name, "cell_id": cell.id, "suite": cell.entry.get("suite", ""),
            "backend": backend, "label": backend_label(backend, meta),
            "launcher": info.get("launcher") or cell.entry.get("launcher", ""),
            "world_size": int(info["world_size"]), "backend_meta": meta}


def _throughput(row: dict, info: dict) -> dict:
    sps, steps = _flat(info["samples_per_s"]), _flat(info["step_times"])
    mem = info.get("memory") or {}
    rss = [v for v in mem.get("max_rss_mb") or [] if v is not None]
    cuda = [v for v in mem.get("cuda_max_allocated_mb") or [] if v is not None]
    q25, q75 = stats.iqr(sps)
    s25, s75 = stats.iqr(steps)
    return {**row, "workload": info["workload"],
            "workload_params": _json(info.get("workload_params") or {}),
            "knob_set": info.get("knob_set") or "default", "knobs": _json(info["knobs"]),
            "knobs_dict": info["knobs"], "per_rank_batch": int(info["per_rank_batch"]),
            "global_batch": int(info["global_batch"]), "samples": sps, "steps": steps,
            "sps_median": stats.median(sps), "sps_q25": q25, "sps_q75": q75,
            "step_median": stats.median(steps), "step_q25": s25, "step_q75": s75,
            "n_steps": int(sps.size), "max_rss_mb": max(rss) if rss else np.nan,
            "cuda_max_mb": max(cuda) if cuda else np.nan, "monitor": info.get("monitor")}


def _case_labels(df: pd.DataFrame) -> pd.Series:
    """'resnet50', 'resnet50 [fp16]', plus ', b32/rank' where one workload has several batches."""
    nbatch = df.groupby(["run", "workload", "knob_set"])["per_rank_batch"].transform("nunique")
    nparams = df.groupby(["run", "workload", "knob_set"])["workload_params"].transform("nunique")
    out = []
    for (_, r), nb, npar in zip(df.iterrows(), nbatch, nparams):
        s = r["workload"] + ("" if r["knob_set"] == "default" else f" [{r['knob_set']}]")
        if nb > 1 or npar > 1:
            s += f", b{r['per_rank_batch']}/rank"
        if npar > 1:
            s += f" {r['workload_params']}"
        out.append(s)
    return pd.Series(out, index=df.index, dtype=object)


def build_frames(runs: list[Run]) -> Data:
    rows: dict[str, list[dict]] = {k: [] for k in
                                   ("cells", "throughput", "compute_only", "convergence",
                                    "tta", "collective", "memcpy")}
    notes = [n for r in runs for n in r.notes]
    for run in runs:
        for cell in run.cells:
            e = cell.entry
            rows["cells"].append({
                "run": run.name, "cell_id": cell.id, "suite": e.get("suite", ""),
                "backend": e.get("backend", ""), "launcher": e.get("launcher", ""),
                "world_size": e.get("world_size"), "status": cell.status,
                "error": e.get("error") or "", "seconds": e.get("seconds"),
                "log": e.get("log") or "", "env": cell.machine.get("env") or {},
                "versions": cell.machine.get("versions") or {},
                "benchmarks": len(cell.benchmarks)})
            for b in cell.benchmarks:
                info, row = b.info, _common(run, cell, b.info)
                if b.kind == "throughput":
                    rows["throughput"].append(_throughput(row, info))
                elif b.kind == "compute_only":
                    rows["compute_only"].append({
                        **row, "workload": info["workload"], "knobs": _json(info["knobs"]),
                        "ranks": int(info.get("concurrent_ranks", info["world_size"])),
                        "per_rank_batch": int(info["per_rank_batch"]),
                        "step_median": stats.median(_flat(info["step_times"]))})
                elif b.kind == "convergence":
                    rows["convergence"].append({
                        **row, "workload": info["workload"],
                        "losses": np.asarray(info["losses"], float),
                        "reference_losses": np.asarray(info["reference_losses"], float),
                        "wall_times": np.asarray(info.get("wall_times") or [], float),
                        "reference_wall_times": np.asarray(
                            info.get("reference_wall_times") or [], float),
                        "steps": int(info.get("steps") or len(info["losses"])),
                        "max_rel_dev": float(info["max_rel_dev"]),
                        "tolerance": float(info["tolerance"]),
                        "within": bool(info["within_tolerance"])})
                elif b.kind == "time_to_accuracy":
                    rows["tta"].append({
                        **row, "workload": info["workload"], "target": float(info["target"]),
                        "reached": bool(info["reached"]), "seconds": info["seconds"],
                        "steps": info["steps"], "curve": info.get("curve") or []})
                elif b.kind == "collective":
                    rows["collective"].extend({
                        **row, "op": info["op"], "dtype": info.get("dtype", ""),
                        "bytes": int(s["bytes"]),
                        "time_median": stats.median(s["times"]) if s["times"] else np.nan,
                        "algbw_gbps": float(s.get("algbw_gbps", np.nan)),
                        "busbw_gbps": float(s["busbw_gbps"]), "correct": bool(s["correct"])}
                        for s in info["sizes"])
                elif b.kind == "memcpy":
                    rows["memcpy"].append({**row, "device": str(info.get("device", "cpu")),
                                           "bytes": int(info["bytes"]),
                                           "bandwidth_gbps": float(info["bandwidth_gbps"])})
    frames = {k: pd.DataFrame(v) for k, v in rows.items()}
    tp = frames["throughput"]
    if not tp.empty:
        tp["case"] = _case_labels(tp)
        nlaunch = tp.groupby(CASE_KEY + ["label"])["launcher"].transform("nunique")
        tp["series"] = [lab + (f" via {la}" if n > 1 else "")
                        for lab, la, n in zip(tp["label"], tp["launcher"], nlaunch)]
    return Data(runs=runs, notes=notes, tta=frames["tta"], **{
        k: frames[k] for k in ("cells", "throughput", "compute_only", "convergence",
                               "collective", "memcpy")})


if __name__ == "__main__":
    d = build_frames([load_run(Path(p)) for p in sys.argv[1:]])
    cols = ["run", "case", "label", "world_size", "sps_median", "step_median"]
    print(d.throughput[cols].to_string() if not d.throughput.empty else "no throughput")

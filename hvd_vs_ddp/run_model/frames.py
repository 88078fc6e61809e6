"""Loaded runs -> tidy pandas DataFrames, one per result kind, plus one of cells.

The rows come from each benchmark's record (`rows()`, beside the record in
hvd_vs_ddp/results_schema/kinds/); this module only adds where each row came from (run, cell, suite,
label) and makes the DataFrames. Medians and IQRs are computed from the raw per-step
values (never copied from the summary fields of the JSON), so every table and figure
shows the same numbers. A benchmark's `suite` is the suite that writes its kind
(results.kinds: throughput, compute, convergence, collectives).

Repetitions: every row carries `rep` (1..N, the repetition of its cell). The per-
repetition throughput rows are `throughput_reps`; `throughput` has one row per cell
and case with the repetitions pooled (`samples`/`steps`: every timed step of every
repetition, medians over those) and kept apart for the statistics (`rep_samples`,
`rep_steps`, `rep_rank_steps`, `rep_pace_probe`: one entry per repetition; `n_reps`).

    from hvd_vs_ddp.run_model.frames import build_frames
    data = build_frames([load_judged_run(p) for p in run_dirs])
    data.throughput[["label", "world_size", "sps_median"]]
    python -m hvd_vs_ddp.run_model.frames RUN_DIR...       # prints the throughput frame
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.results_schema import KINDS, BenchmarkRecord, summary
from hvd_vs_ddp.run_model.labels import backend_label
from hvd_vs_ddp.run_model.load import Cell, Run

# Cells that measure the same thing (Horovod vs DDP is compared inside one group).
# input_mode: the input pipeline ("memory", "jpeg"; hvd_vs_ddp/workloads/jpeg_set.py).
# link: "loopback" (one host) or the rate between emulated hosts (hvd_vs_ddp/links/).
CASE_KEY = ["run", "workload", "workload_params", "per_rank_batch", "knob_set", "knobs",
            "input_mode", "link"]


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
    throughput_reps: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)  # every FRAME, by name


def _common(run: Run, cell: Cell, rec: BenchmarkRecord, rep: int) -> dict[str, Any]:
    """Columns every kind's rows get besides the record's own: where it came from."""
    return {"run": run.name, "cell_id": cell.id, "suite": rec.SUITE, "rep": rep,
            "label": backend_label(rec.backend, rec.backend_meta or {}),
            "library": catalog.library(rec.backend)}


POOL_KEY = ["run", "cell_id", "workload", "workload_params", "per_rank_batch", "knob_set",
            "knobs", "input_mode"]


def pool_reps(reps: pd.DataFrame) -> pd.DataFrame:
    """One throughput row per cell and case: repetitions pooled, and kept apart."""
    out = []
    for _, g in reps.sort_values("rep", kind="stable").groupby(POOL_KEY, sort=False):
        first = g.iloc[0].to_dict()
        sps, steps = np.concatenate(list(g["samples"])), np.concatenate(list(g["steps"]))
        q25, q75 = summary.iqr(sps)
        s25, s75 = summary.iqr(steps)
        out.append({**first, "rep": None, "n_reps": len(g), "samples": sps, "steps": steps,
                    "rep_samples": list(g["samples"]), "rep_steps": list(g["steps"]),
                    "rep_rank_steps": list(g["rank_steps"]),
                    "rep_pace_probe": (list(g["pace_probe"]) if "pace_probe" in g
                                       else [None] * len(g)),
                    "sps_median": summary.median(sps), "sps_q25": q25, "sps_q75": q75,
                    "step_median": summary.median(steps), "step_q25": s25, "step_q75": s75,
                    "n_steps": int(sps.size), "max_rss_mb": g["max_rss_mb"].max(),
                    "cuda_max_mb": g["cuda_max_mb"].max()})
    return pd.DataFrame(out)


def rep_samples(r: pd.Series, suffix: str = "") -> list:
    """The per-repetition samples of a pooled throughput row (one list if not pooled)."""
    reps = r.get("rep_samples" + suffix)
    return list(reps) if isinstance(reps, list) else [r["samples" + suffix]]


def _case_labels(df: pd.DataFrame) -> pd.Series:
    """'resnet50', 'resnet50 [fp16]', plus ', b32/rank' where one workload has several
    batches, and ' [MODE input]' for every input mode but the plain one of its workload:
    "device" (ready batches, the default) where the run fed it so, else
    "memory" (hvd_vs_ddp/workloads/feed.py; the conditions say what each meant)."""
    group = df.groupby(["run", "workload", "knob_set"])
    nbatch = group["per_rank_batch"].transform("nunique")
    nparams = group["workload_params"].transform("nunique")
    modes = (df["input_mode"].fillna("memory") if "input_mode" in df
             else pd.Series("memory", index=df.index))
    on_device = modes.eq("device").groupby([df["run"], df["workload"], df["knob_set"]]
                                           ).transform("any")
    out = []
    for (_, r), nb, npar, mode, dev in zip(df.iterrows(), nbatch, nparams, modes, on_device):
        s = r["workload"] + ("" if r["knob_set"] == "default" else f" [{r['knob_set']}]")
        s += "" if mode == ("device" if dev else "memory") else f" [{mode} input]"
        if nb > 1 or npar > 1:
            s += f", b{r['per_rank_batch']}/rank"
        if npar > 1:
            s += f" {r['workload_params']}"
        link = r.get("link")
        s += f" [link {link}]" if isinstance(link, str) and link != "loopback" else ""
        out.append(s)
    return pd.Series(out, index=df.index, dtype=object)


def build_frames(runs: list[Run]) -> Data:
    rows: dict[str, list[dict]] = {"cells": [], **{cls.FRAME: [] for cls in KINDS.values()}}
    notes = [n for r in runs for n in r.notes]
    for run in runs:
        for cell in run.cells:
            e, machine = cell.entry, cell.machine
            rows["cells"].append({
                "run": run.name, "cell_id": cell.id, "suite": ",".join(e.suites),
                "backend": e.backend, "launcher": e.launcher,
                "world_size": e.world_size, "status": cell.status,
                "error": cell.error, "seconds": e.seconds,
                "log": e.log or "", "env": (machine.env if machine else None) or {},
                "reps_done": sum(r.status == "passed" for r in e.repeats or []),
                "reps": len(e.repeats or []),
                "versions": (machine.versions if machine else None) or {},
                "benchmarks": len(cell.benchmarks)})
            for b in cell.benchmarks:
                common = _common(run, cell, b.record, b.rep)
                rows[b.record.FRAME].extend({**common, **row} for row in b.record.rows())
    frames = {k: pd.DataFrame(v) for k, v in rows.items()}
    reps = frames["throughput"]
    tp = frames["throughput"] = pool_reps(reps) if not reps.empty else reps
    if not tp.empty:
        tp["case"] = _case_labels(tp)
        nlaunch = tp.groupby(CASE_KEY + ["label"])["launcher"].transform("nunique")
        tp["series"] = [lab + (f" via {la}" if n > 1 else "")
                        for lab, la, n in zip(tp["label"], tp["launcher"], nlaunch)]
        plans = {r.name: r.manifest.budget for r in runs}  # run --budget: sequential looks
        tp["plan"] = [plans.get(name) for name in tp["run"]]
    return Data(runs=runs, notes=notes, frames=frames, throughput_reps=reps, **{
        k: frames[k] for k in ("cells", "throughput", "compute_only", "convergence", "tta",
                               "collective", "memcpy")})


if __name__ == "__main__":
    from hvd_vs_ddp.run_model.disturbed import load_judged_run

    d = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    cols = ["run", "case", "label", "world_size", "sps_median", "step_median"]
    print(d.throughput[cols].to_string() if not d.throughput.empty else "no throughput")

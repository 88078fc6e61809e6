"""The profiler's ruler in "Where the step goes": per backend and world size, computation,
communication, their overlap and idle time from the torch.profiler traces of
`run --profile` (hvd_vs_ddp/reports/profile_trace.py reads one trace), beside the subtraction.

Each profiled step is read on the rank that computed longest (the step waits for it);
the cell's figures are medians over every profiled step of every repetition. The
profiler's exposed communication is compared with the subtraction's interval like the
libraries' own figures (hvd_vs_ddp/reports/sections/why/steps.py).

    from hvd_vs_ddp.reports.sections.why.profiler import profiler_frame
    prof, notes = profiler_frame(data)
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import HOROVOD_LIB
from hvd_vs_ddp.reports.profile_trace import TraceError, breakdown, read_trace
from hvd_vs_ddp.reports.sections.why.steps import beside_results
from hvd_vs_ddp.run_model.frames import POOL_KEY, Data

KEYS = ("run", "case", "series", "world_size")
PARTS = ("wall_s", "compute_s", "comm_s", "overlap_s", "exposed_comm_s", "idle_s")


def _cell_steps(data: Data, rep: pd.Series, notes: list[str]) -> list[dict[str, Any]]:
    """Every profiled step of one repetition, seen on its longest-computing rank."""
    run = next(r for r in data.runs if r.name == rep["run"])
    per_rank = []
    for name in rep["profile_traces"]:
        path = beside_results(run, rep["cell_id"], name)
        try:
            per_rank.append(breakdown(read_trace(path)))
        except TraceError as exc:
            notes.append(f"{rep['cell_id']}: profiler trace not read: {exc}")
            return []
    n = min((len(x) for x in per_rank), default=0)
    return [max((rows[i] for rows in per_rank), key=lambda s: s["compute_s"])
            for i in range(n)]


def profiler_frame(data: Data) -> tuple[pd.DataFrame, list[str]]:
    """One row per throughput cell with traces: medians of the profiled steps' parts."""
    reps = data.throughput_reps
    notes: list[str] = []
    rows: list[dict[str, Any]] = []
    if reps.empty or "profile_traces" not in reps:
        return pd.DataFrame(), notes
    for _, r in data.throughput.iterrows():
        mine = reps
        for k in POOL_KEY:
            mine = mine[mine[k] == r[k]]
        steps = [s for _, rep in mine.iterrows() if isinstance(rep["profile_traces"], list)
                 for s in _cell_steps(data, rep, notes)]
        if not steps:
            continue
        row = {k: r[k] for k in KEYS}
        row.update({f"prof_{p}": float(np.median([s[p] for s in steps])) for p in PARTS})
        if r["world_size"] > 1 and not any(s["comm_s"] > 0 for s in steps):
            for p in ("comm_s", "overlap_s", "exposed_comm_s"):
                row[f"prof_{p}"] = float("nan")  # unseen, not zero
            notes.append(f"{r['case']}, {r['series']} at {r['world_size']} ranks: the "
                         "profiler saw no communication (the mpi4py process group's "
                         "collectives run on its own Python thread, which torch.profiler "
                         "does not record); DDP's own statistics above measure it.")
        row.update(prof_steps=len(steps), prof_gpu=any(s["gpu"] for s in steps),
                   prof_horovod=r["library"] == HOROVOD_LIB)
        rows.append(row)
    return pd.DataFrame(rows), notes


def agreement(row: pd.Series) -> str:
    """The profiler's exposed communication against the subtraction's interval."""
    lo, hi, own = row.get("sub_lo"), row.get("sub_hi"), row.get("prof_exposed_comm_s")
    if any(v is None or pd.isna(v) for v in (lo, hi, own)):
        return ""
    if lo <= own <= hi:
        return "agrees"
    side = "less" if own < lo else "more"
    return f"disagrees: {side} ({own * 1e3:.1f} ms vs [{lo * 1e3:.1f}, {hi * 1e3:.1f}] ms)"

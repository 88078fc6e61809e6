"""One ruler for both libraries: computation, communication, overlap and idle per step,
read from the torch.profiler traces that `--profile-steps` writes (hvd_vs_ddp/harness/profiling.py).

Per rank and profiled step (the `hvd_vs_ddp.step#K` marker's interval W):
- computation C: the union of the training thread's operator intervals (torch's
  `cpu_op` events: forward, backward, optimizer, DDP's reducer copies) that are not
  communication; with GPU kernels in the trace, the GPU kernels that are not NCCL's;
- communication M: the union, over every thread, of the collectives' own intervals
  (Gloo's worker threads `gloo:all_reduce`, `nccl:*`, `mpi:*`, c10d's `c10d::*` ops,
  `record_param_comms`; NCCL kernels on GPUs) and of `horovod:synchronize`, the training
  thread's wait for Horovod's background thread (which the profiler cannot see: for
  Horovod M is the exposed part only, its hidden part is in the timeline);
- overlap |C n M n W|; exposed communication |M n W| - overlap; idle = |W| - |C u M|.
A step waits for its last rank, so the cell's figure per step is read on the rank that
computed longest (as DDP's own statistics are read on the rank that finished backward
last, hvd_vs_ddp/reports/sections/why/steps.py).

Why not Holistic Trace Analysis: its temporal breakdown and overlap read GPU kernels
only (trace rows on a CUDA stream), so CPU traces give empty results, and it brings
jupyterlab and plotly as hard dependencies; this module is small interval arithmetic
over the Chrome trace format, tested on traces recorded here (tests/fixtures/profile/).
On GPU machines HTA fits and can read the same trace files.

    from hvd_vs_ddp.reports.profile_trace import read_trace, breakdown
    rows = breakdown(read_trace(path))     # one dict per profiled step
    python -m hvd_vs_ddp.reports.profile_trace TRACE.json...
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

STEP = re.compile(r"^hvd_vs_ddp\.step#(\d+)$")
COMM = re.compile(r"^(gloo|nccl|mpi|ucc):|^c10d::|^horovod:|^record_param_comms$"
                  r"|^nccl|ProcessGroup", re.IGNORECASE)
Interval = tuple[float, float]


class TraceError(ValueError):
    """A trace that cannot be read: the message names the file and what is wrong."""


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The complete ('X') events of a Chrome trace file, checked for what a viewer needs."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceError(f"{path}: not a readable JSON trace ({exc})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceError(f"{path}: no traceEvents list (not a Chrome trace)")
    out = []
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X":
            try:
                ts, dur = float(e["ts"]), float(e["dur"])
            except (KeyError, TypeError, ValueError):
                raise TraceError(f"{path}: an 'X' event without numeric ts and dur: "
                                 f"{str(e)[:80]}") from None
            out.append({**e, "ts": ts, "dur": dur})
    return out


def union(intervals: list[Interval]) -> list[Interval]:
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def length(intervals: list[Interval]) -> float:
    return sum(b - a for a, b in intervals)


def intersect(x: list[Interval], y: list[Interval]) -> list[Interval]:
    """Intersection of two unions (each sorted and disjoint)."""
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def _clip(events: list[dict[str, Any]], w: Interval) -> list[Interval]:
    return [(max(e["ts"], w[0]), min(e["ts"] + e["dur"], w[1])) for e in events
            if e["ts"] < w[1] and e["ts"] + e["dur"] > w[0]]


def breakdown(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per profiled step: step, wall, compute, comm, overlap, exposed_comm, idle
    (seconds) and `gpu` (whether GPU kernels were the computation)."""
    steps = sorted(((int(m.group(1)), e) for e in events
                    if (m := STEP.match(str(e.get("name", ""))))), key=lambda x: x[0])
    kernels = [e for e in events if e.get("cat") == "kernel"]
    comm_ev = [e for e in events if COMM.search(str(e.get("name", "")))]
    rows = []
    for k, mark in steps:
        w = (mark["ts"], mark["ts"] + mark["dur"])
        if kernels:
            comp_ev = [e for e in kernels if not COMM.search(str(e.get("name", "")))]
        else:
            comp_ev = [e for e in events if e.get("cat") == "cpu_op"
                       and e.get("tid") == mark.get("tid")
                       and not COMM.search(str(e.get("name", "")))]
        comp, comm = union(_clip(comp_ev, w)), union(_clip(comm_ev, w))
        both = length(intersect(comp, comm))
        busy = length(union(comp + comm))
        us = 1e-6
        rows.append({"step": k, "wall_s": mark["dur"] * us, "compute_s": length(comp) * us,
                     "comm_s": length(comm) * us, "overlap_s": both * us,
                     "exposed_comm_s": (length(comm) - both) * us,
                     "idle_s": max(mark["dur"] - busy, 0.0) * us, "gpu": bool(kernels)})
    return rows


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg)
        for row in breakdown(read_trace(Path(arg))):
            print("  " + ", ".join(f"{k} {v * 1e3:.2f} ms" if k.endswith("_s") else f"{k} {v}"
                                   for k, v in row.items()))

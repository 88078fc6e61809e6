"""Horovod's timeline (HOROVOD_TIMELINE) -> what Horovod did in each training step.

The timeline is Chrome trace JSON written by Horovod's coordinator (rank 0; event
names from horovod/common/timeline.cc, common.h and ops/*_operations.cc, 0.28.1):
every tensor is a "process" (pid, named by a metadata event) with, in order,
  NEGOTIATE_ALLREDUCE  B ... E   from the first rank's request to the last one's (with
                                 "X" events named "0", "1"... when each rank reported
                                 ready; only on the uncached path: once a tensor is in
                                 Horovod's response cache, ranks agree through a bit
                                 vector and only the span is written)
  ALLREDUCE            B ... E   the operation, from the background thread taking up the
                                 response to the end; inside it the activities
    WAIT_FOR_DATA, WAIT_FOR_OTHER_TENSOR_DATA (one tensor after the other), then for the
    whole response INIT_FUSION_BUFFER, MEMCPY_IN_FUSION_BUFFER, GLOO_ALLREDUCE |
    MPI_ALLREDUCE | NCCL_ALLREDUCE, MEMCPY_OUT_FUSION_BUFFER (B ... E each; QUEUE on GPUs)
and, with HOROVOD_TIMELINE_MARK_CYCLES=1, instant "CYCLE_START" markers. Timestamps are
microseconds since the timeline started; the first metadata event carries
`start_time_since_epoch_in_micros`, which puts them on the wall clock of the steps the
suite recorded (rank_step_starts). One background thread writes every event in the
order it happened, so the top-level ALLREDUCE events written back to back belong to one
(fused) response.

Horovod ends every event with "}]" and overwrites the "]" with the next ",", so a file
is valid JSON unless the process died mid-write; `read_events` then keeps every
complete event (and says so) rather than failing.

    from hvd_vs_ddp.reports.horovod_timeline import read_events, parse, per_step
    tl = parse(read_events(Path("cells/x.horovod-timeline.json")))
    steps = per_step(tl, starts, durations)      # rank 0's steps, epoch seconds
    python -m hvd_vs_ddp.reports.horovod_timeline FILE      # a summary of one timeline
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ALLREDUCE_OPS = ("GLOO_ALLREDUCE", "MPI_ALLREDUCE", "NCCL_ALLREDUCE", "CCL_ALLREDUCE",
                 "MPI_ADASUM_ALLREDUCE")
MEMCPY_IN, MEMCPY_OUT = "MEMCPY_IN_FUSION_BUFFER", "MEMCPY_OUT_FUSION_BUFFER"
# activities Horovod writes one tensor after the other (ops/collective_operations.cc); the
# others are written for all tensors of a response at once (ActivityStartAll)
PER_TENSOR = ("WAIT_FOR_DATA", "WAIT_FOR_OTHER_TENSOR_DATA")
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int32": 4,
               "int64": 8, "uint8": 1, "int8": 1, "bool": 1}


class TimelineError(ValueError):
    """The file is not a Horovod timeline; the message names it."""


@dataclass
class Response:
    """One operation of the background thread: one or more (fused) tensors."""
    op: str                      # ALLREDUCE, BROADCAST...
    tensors: list[str]
    start_us: float              # top-level B
    end_us: float = np.nan       # top-level E (the last tensor's)
    activities: dict[str, float] = field(default_factory=dict)  # name -> seconds
    bytes: int = 0
    ready_us: float = np.nan     # the last tensor's negotiation end (all ranks ready)
    negotiate_s: float = 0.0     # its longest negotiation (first to last rank ready)
    last_rank: int | None = None  # who reported last (uncached negotiation only)
    rank_wait_s: dict[int, float] = field(default_factory=dict)  # rank -> its wait
    last_ready_us: float = -np.inf  # when that last rank reported ready


@dataclass
class Timeline:
    start_epoch_us: float | None
    responses: list[Response]
    cycles_us: list[float]
    complete: bool               # False: the file was cut short and repaired
    events: int


def read_events(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """The trace's events and whether the file was complete JSON."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise TimelineError(f"{path}: cannot read the Horovod timeline ({exc})") from None
    try:
        doc = json.loads(text)
        events = doc.get("traceEvents") if isinstance(doc, dict) else doc
        if not isinstance(events, list):
            raise TimelineError(f"{path}: not a Chrome trace (expected a JSON list of events)")
        return [e for e in events if isinstance(e, dict)], True
    except json.JSONDecodeError:
        pass
    start = text.find("[")
    if start < 0:
        raise TimelineError(f"{path}: not a Chrome trace (no '[' in the file)")
    dec, pos, out = json.JSONDecoder(), start + 1, []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            break  # cut mid-event: keep what came before
        if isinstance(obj, dict):
            out.append(obj)
    return out, False


def _shape_bytes(args: dict[str, Any]) -> int:
    shape = [int(x) for x in re.findall(r"\d+", str(args.get("shape", "")))]
    return int(np.prod(shape)) * DTYPE_BYTES.get(str(args.get("dtype", "")).lower(), 4) \
        if shape else 0


def parse(events: list[dict[str, Any]], complete: bool = True) -> Timeline:
    """Responses (fused groups) with their activities, negotiation and size."""
    names: dict[Any, str] = {}
    start_epoch = None
    open_: dict[Any, list[tuple[str, float]]] = {}
    negotiation: dict[str, tuple[float, float, dict[int, float]]] = {}  # last span per tensor
    pending_nego: dict[str, tuple[float, dict[int, float]]] = {}
    current: dict[str, Response] = {}   # tensor -> its response in flight
    responses: list[Response] = []
    cycles: list[float] = []
    run: Response | None = None          # top-level B events written back to back
    for e in events:
        ph, name, pid = e.get("ph"), e.get("name"), e.get("pid")
        ts = float(e.get("ts", 0.0))
        if ph == "M":
            args = e.get("args") or {}
            if name == "process_name" and "start_time_since_epoch_in_micros" in args:
                start_epoch = float(args["start_time_since_epoch_in_micros"])
            elif name == "process_name" and "name" in args:
                names[pid] = str(args["name"])
            continue
        if ph == "i":
            if name == "CYCLE_START":
                cycles.append(ts)
            continue
        tensor = names.get(pid, str(pid))
        stack = open_.setdefault(pid, [])
        if ph == "B" and str(name).startswith("NEGOTIATE_"):
            pending_nego.setdefault(tensor, (ts, {}))
            run = None
        elif ph == "B":
            if not stack:  # top level: the operation starts
                if run is None or run.op != name:
                    run = Response(op=str(name), tensors=[], start_us=ts)
                    responses.append(run)
                run.tensors.append(tensor)
                current[tensor] = run
                nego = negotiation.pop(tensor, None)
                if nego is not None:
                    run.ready_us = np.nanmax([run.ready_us, nego[1]])
                    run.negotiate_s = max(run.negotiate_s, (nego[1] - nego[0]) / 1e6)
                    _last_rank(run, nego[2])
            else:
                run = None
            stack.append((str(name), ts))
        elif ph == "X" and tensor in pending_nego and str(name).isdigit():
            pending_nego[tensor][1][int(str(name))] = ts  # rank <name> reported ready
        elif ph == "E":
            run = None
            if tensor in pending_nego and not stack:
                t0, ready = pending_nego.pop(tensor)
                negotiation[tensor] = (t0, ts, ready)
                continue
            if not stack:
                continue
            what, t0 = stack.pop()
            resp = current.get(tensor)
            if resp is None:
                continue
            if stack and what in PER_TENSOR:
                resp.activities[what] = resp.activities.get(what, 0.0) + (ts - t0) / 1e6
            elif stack:  # an activity inside the operation: the same for all its tensors
                resp.activities.setdefault(what, (ts - t0) / 1e6)
            else:
                resp.end_us = np.nanmax([resp.end_us, ts])
                resp.bytes += _shape_bytes(e.get("args") or {})
                current.pop(tensor, None)
    return Timeline(start_epoch, responses, cycles, complete, len(events))


def _last_rank(resp: Response, ready: dict[int, float]) -> None:
    """Who reported ready last for this tensor, and how long each rank waited for it."""
    if len(ready) < 2:
        return
    last = max(ready, key=lambda r: ready[r])
    if ready[last] >= resp.last_ready_us:  # the tensor of the response that came last
        resp.last_rank, resp.last_ready_us = last, ready[last]
        resp.rank_wait_s = {r: (ready[last] - t) / 1e6 for r, t in sorted(ready.items())}


def per_step(tl: Timeline, starts: list[float], durations: list[float]) -> list[dict]:
    """One dict per step (rank 0's wall-clock windows, seconds since the epoch): what the
    responses that started inside it did. Needs the trace's start time."""
    if tl.start_epoch_us is None:
        raise TimelineError("the timeline has no start_time_since_epoch_in_micros; its "
                            "events cannot be placed on the steps")
    t0 = tl.start_epoch_us / 1e6
    rows = []
    for i, (s, d) in enumerate(zip(starts, durations)):
        inside = [r for r in tl.responses if s <= t0 + r.start_us / 1e6 < s + d]
        ar = [r for r in inside if r.op == "ALLREDUCE"]
        cyc = np.asarray([c for c in tl.cycles_us if s <= t0 + c / 1e6 < s + d])
        waits: dict[int, float] = {}
        last = max(ar, key=lambda r: r.ready_us, default=None) if ar else None
        if last is not None:
            waits = dict(last.rank_wait_s)
        rows.append({
            "step": i, "step_s": d, "responses": len(ar),
            "tensors": sum(len(r.tensors) for r in ar),
            "tensors_per_response": (float(np.mean([len(r.tensors) for r in ar]))
                                     if ar else np.nan),
            "bytes": sum(r.bytes for r in ar),
            "max_response_bytes": max((r.bytes for r in ar), default=0),
            "allreduce_s": sum(_op_time(r) for r in ar),
            "memcpy_s": sum(r.activities.get(MEMCPY_IN, 0.0) + r.activities.get(MEMCPY_OUT, 0.0)
                            for r in ar),
            "op_s": sum((r.end_us - r.start_us) / 1e6 for r in ar if np.isfinite(r.end_us)),
            "queue_s": sum(max(0.0, (r.start_us - r.ready_us) / 1e6) for r in ar
                           if np.isfinite(r.ready_us)),
            "negotiate_max_s": max((r.negotiate_s for r in ar), default=0.0),
            "negotiate_last_s": last.negotiate_s if last is not None else np.nan,
            "last_rank": last.last_rank if last is not None else None,
            "rank_wait_s": waits,
            # from the last rank's last gradient (all ranks ready: every backward is over)
            # to the end of the last response: communication no computation hides
            "tail_s": _tail(ar),
            "cycles": int(cyc.size),
            "cycle_ms": float(np.median(np.diff(cyc)) / 1e3) if cyc.size > 1 else np.nan,
        })
    return rows


def _tail(ar: list[Response]) -> float:
    ready = [r.ready_us for r in ar if np.isfinite(r.ready_us)]
    ends = [r.end_us for r in ar if np.isfinite(r.end_us)]
    return max(0.0, (max(ends) - max(ready)) / 1e6) if ready and ends else np.nan


def _op_time(r: Response) -> float:
    return sum(v for k, v in r.activities.items() if k in ALLREDUCE_OPS)


def summary(tl: Timeline) -> dict[str, Any]:
    ar = [r for r in tl.responses if r.op == "ALLREDUCE"]
    cyc = np.diff(np.asarray(tl.cycles_us))
    return {"events": tl.events, "complete": tl.complete, "responses": len(ar),
            "tensors": sum(len(r.tensors) for r in ar),
            "tensors_per_response": float(np.mean([len(r.tensors) for r in ar])) if ar else 0,
            "max_response_mb": max((r.bytes for r in ar), default=0) / 2**20,
            "allreduce_ms_median": float(np.median([_op_time(r) for r in ar]) * 1e3)
            if ar else np.nan,
            "cycles": len(tl.cycles_us),
            "cycle_ms_median": float(np.median(cyc) / 1e3) if cyc.size else np.nan,
            "uncached_negotiations": sum(r.last_rank is not None for r in ar)}


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        evs, ok = read_events(Path(arg))
        print(arg, summary(parse(evs, ok)))

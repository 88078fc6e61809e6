"""Where a run's answers hold: one line per run for the report's answer block.

A measured verdict holds for the machine that measured it: the device kind and count,
the cores each rank had, the link between ranks. On a CPU host with fewer cores than
ranks, Horovod's background thread takes a core from training (the report's "Where the
step goes" notes show it), which a GPU machine does not share; so the line says so, and,
where the run allows (a GPU run with a projection onto GPU links, RUN_DIR/projection.json
from `hvd-vs-ddp project`), what that projection expects there, labelled a projection;
a CPU run's projection carries the CPU's compute, so for a CPU run the line names the
command that gives a GPU expectation instead.

    from hvd_vs_ddp.reports.conditions import where_it_holds
    for line in where_it_holds(data): print(line)
"""
from __future__ import annotations

import json
from pathlib import Path

from hvd_vs_ddp.backends.launchers import ONE_HOST_LAUNCHERS
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.reports.projection_section import FORMAT


def _sizes(run) -> list[int]:
    return sorted({int(c.entry.world_size) for c in run.cells
                   if getattr(getattr(c, "entry", None), "world_size", None)})


def _emulated(run) -> str | None:
    """The links of the run's cells across emulated hosts (run --link-rate), if any."""
    rates = sorted({e.link for c in run.cells if (e := getattr(c, "entry", None)) is not None
                    and getattr(e, "link", None)}, key=_rate_order)
    if not rates:
        return None
    return (f"the -link<rate> cells: one rank on each of 2 emulated hosts (network namespaces "
            f"of this machine) joined by a veth link shaped to {', '.join(rates)} in both "
            "directions (only the rate is emulated, no delay: docs/links.md); the others "
            "on one host (loopback and shared memory, no network)")


def _rate_order(rate: str) -> float:
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for unit, scale in units.items():
        if rate.endswith(unit):
            try:
                return float(rate[:-len(unit)]) * scale
            except ValueError:
                break
    return float("inf")


def _link(run) -> str:
    """Where the ranks ran: the run's --hosts (its manifest) reach only the cells whose
    launcher takes hosts; torchrun and spawn cells ran on one host all the same; cells
    across emulated hosts say their link's rate."""
    hosts = getattr(getattr(run, "manifest", None), "hosts", None)
    one = "all ranks on one host (loopback and shared memory, no network)"
    if not hosts:
        return _emulated(run) or one
    launchers = {getattr(getattr(c, "entry", None), "launcher", None) for c in run.cells
                 if (getattr(getattr(c, "entry", None), "world_size", 1) or 1) > 1}
    spread = sorted(la for la in launchers if la and la not in ONE_HOST_LAUNCHERS)
    local = sorted(la for la in launchers if la and la in ONE_HOST_LAUNCHERS)
    if not spread:
        return one + f" (--hosts {hosts} reaches no {', '.join(local) or 'such'} cell)"
    text = f"ranks of the {', '.join(spread)} cells over the hosts {hosts}"
    return text + (f"; the {', '.join(local)} cells on one host" if local else "")


def _projected(run) -> str | None:
    f = RunFolder(Path(run.path)).projection
    try:
        doc = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None
    t = doc.get("target") or {}
    if t.get("interconnect") in (None, "measured"):
        return None
    said = []
    for w in doc.get("workloads") or []:
        for c in (w.get("comparison") or [])[-1:]:  # its largest size
            said.append(f"{w.get('workload')} at {c.get('devices')} devices: {c.get('text')}")
    if not said:
        return None
    return (f"PROJECTION (not measured) for {t.get('intra_node')} nodes of "
            f"{t.get('devices_per_node')} joined by {t.get('nics_per_node')} x "
            f"{t.get('interconnect')}: " + "; ".join(said))


def _inputs(data, run_name: str) -> str:
    """' Input: MODE (what it meant where it ran); steps timed by ...' for a run's
    throughput cells (hvd_vs_ddp/workloads/feed.py), or '' when its records predate it."""
    tp = getattr(data, "throughput", None)
    if tp is None or tp.empty or "input_mode" not in tp:
        return ""
    mine = tp[tp["run"] == run_name]
    said: dict[str, str] = {}
    for _, r in mine.iterrows():
        meaning = (r.get("input_pipeline") or {}).get("meaning")
        if meaning and r["input_mode"] not in said:
            said[r["input_mode"]] = meaning
    if not said:
        return ""
    timers = set(mine["step_timer"]) if "step_timer" in mine else set()
    timed = ("; each step timed by CUDA events read after its round" if timers == {"events"}
             else "; each step timed alone by the wall clock" if timers == {"wall"} else "")
    return " Input: " + "; ".join(f"{m} ({t})" for m, t in said.items()) + timed + "."


def where_it_holds(data) -> list[str]:
    out = []
    multi = len(data.runs) > 1
    for run in data.runs:
        hw = run.hardware
        sizes = _sizes(run) or [1]
        gpus = hw.get("gpus") or []
        if run.gpus:
            kind = ", ".join(sorted({str(g) for g in gpus})) if isinstance(gpus, list) \
                else "GPU"
            device = f"{run.gpus} GPU{'s' if run.gpus > 1 else ''} ({kind})"
            per_rank = f"{run.cores} CPU cores on the host"
        else:
            device = f"CPU only ({hw.get('cpu') or 'unknown CPU'}, no GPU)"
            per_rank = f"{run.cores} cores shared by the ranks: " + ", ".join(
                f"{run.cores / n:.2g} per rank at {n}" for n in sizes)
        line = (("[" + run.name + "] " if multi else "") +
                f"These measured answers hold for {device}; {per_rank}; {_link(run)}.")
        if not run.gpus and any(n > run.cores for n in sizes):
            line += (" With more ranks than cores, Horovod's background thread takes a "
                     "core from training; on GPU machines it does not.")
        line += _inputs(data, run.name)
        projected = _projected(run) if run.gpus else None
        if projected:
            line += " " + projected + "."
        elif run.gpus:
            line += (" hvd-vs-ddp project RUN_DIR gives what to expect on more GPU nodes "
                     "(a projection; docs/projection.md).")
        else:  # a CPU run's projection carries the CPU's compute: no GPU expectation
            line += (" What to expect on GPUs for this workload needs its one-GPU step: "
                     "hvd-vs-ddp project --compute-ms MS --model ... (a projection; "
                     "docs/projection.md).")
        out.append(line)
    return out

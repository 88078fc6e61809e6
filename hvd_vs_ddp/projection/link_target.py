"""`hvd-vs-ddp project RUN --link-rate RATES`: each library on two CPU hosts joined by a
TCP link of a given rate, one rank a host, projected from a run's one-host cells.

A CPU target of its own: no CPU-to-GPU distance is added, no interconnect row is read.
Per workload and library series measured at 2 ranks on loopback, with its compute-only
reference cell, each rate's step is predicted by hvd_vs_ddp/projection/links.py (the
loopback step, the compute-only step, and the ring allreduce's bytes over the rate at
TCP's share of it measured on this machine's veth, docs/links.md), from "the link hides
behind backward" to "nothing overlaps", with a 95% prediction band that also carries the
spread of the repetitions it was fitted on; the pair's Horovod/DDP ratio gets the band
of the two steps' bands and the report's verdict words at the margin. Where the
run itself crossed that rate (`run --emulate-hosts 2 --link-rate ...`), the measured step
and ratio stand beside the prediction, with whether the band held them.

    hvd-vs-ddp project runs/<name> --link-rate 500mbit,1gbit [--workloads resnet50]

Printed, not written: the run's projection.json stays the cluster projection the report
shows. Bad input (no run, options of the cluster projection, a run without 2-rank
loopback cells and their compute-only references) is one line and exit 2, before any
work.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import HOROVOD_LIB
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.projection.label import LABEL, ProjectError
from hvd_vs_ddp.projection.links import (
    LOOPBACK,
    MEASURED_EFFICIENCY,
    at_rates,
    link_column,
    predicted_pairs,
)
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN

# the cluster projection's options, which say nothing about two hosts over a TCP link
CLUSTER_ONLY = (("interconnect", "--interconnect"), ("intra_node", "--intra-node"),
                ("compute_ms", "--compute-ms"), ("model", "--model"),
                ("batch_size", "--batch-size"), ("loader_cpu_ms", "--loader-cpu-ms"),
                ("output", "--output"))


def check(args) -> dict[str, Any]:
    """The settings of a projection across a link, or a ProjectError naming the option."""
    for attr, flag in CLUSTER_ONLY:
        if getattr(args, attr, None) is not None:
            raise ProjectError(f"{flag} belongs to the cluster projection; --link-rate "
                               "projects two CPU hosts, one rank each, from RUN_DIR's own "
                               "cells (and prints, it writes no file)")
    if args.devices is not None and tuple(args.devices) != (2,):
        raise ProjectError(f"--devices {','.join(map(str, args.devices))}: --link-rate "
                           "projects two hosts of one rank each (--devices 2 or none)")
    if LOOPBACK in args.link_rate:
        raise ProjectError("--link-rate loopback: the run's own 2-rank cells are the loopback "
                           "ones; name the rates to project, e.g. 500mbit,1gbit")
    if not args.run_dir:
        raise ProjectError("--link-rate projects from a run: give RUN_DIR (one with 2-rank "
                           "cells and their compute-only references, e.g. the quick preset)")
    run = Path(args.run_dir)
    if not RunFolder(run).manifest.is_file():
        raise ProjectError(f"{run}: not a run directory (no manifest.json there)")
    return {"run": run, "links": tuple(args.link_rate),
            "margin": DEFAULT_MARGIN if args.margin is None else args.margin,
            "workloads": list(args.workloads) if args.workloads else None}


def _ms(v: float) -> str:
    return f"{v * 1e3:.0f}" if v == v else "-"


def render_text(steps: pd.DataFrame, pairs: pd.DataFrame, efficiency: float,
                margin: float) -> str:
    out = [LABEL, "target: 2 CPU hosts, one rank each, joined by TCP at each rate (TCP's "
           f"share of the rate {efficiency:.3f}, measured on this machine's veth)", ""]
    w = max(12, *(len(x) for x in steps["workload"]))
    sw = max(18, *(len(x) for x in steps["series"]))
    out.append(f"{'workload':{w}s} {'link':8s} {'series':{sw}s} {'predicted ms [band]':>20s} "
               f"{'measured':>9s} {'held':>5s}")
    for _, r in steps.iterrows():
        held = "" if r["within"] is None else ("yes" if r["within"] else "no")
        band = f"{_ms(r['point_s'])} [{_ms(r['band_lo_s'])}-{_ms(r['band_hi_s'])}]"
        out.append(f"{r['workload']:{w}s} {r['link']:8s} {r['series']:{sw}s} {band:>20s} "
                   f"{_ms(r['measured_s']):>9s} {held:>5s}")
    if not pairs.empty:
        out += ["", f"Horovod / DDP (samples/s; > 1: Horovod faster), verdicts at "
                f"±{margin:.0%}:"]
        for _, p in pairs.iterrows():
            said = (f"faster: {p['horovod'] if p['faster'] == HOROVOD_LIB else p['ddp']}"
                    if p["faster"] else p["verdict"])
            seen = "" if p["held"] is None else (
                f"; measured {p['measured']:.3f} [{p['measured_lo']:.3f}-"
                f"{p['measured_hi']:.3f}], {'held' if p['held'] else 'outside the band'}")
            out.append(f"  {p['workload']} at {p['link']}: {p['horovod']} / {p['ddp']} "
                       f"{p['predicted']:.3f} [{p['predicted_lo']:.3f}-"
                       f"{p['predicted_hi']:.3f}]: {said}{seen}")
    return "\n".join(out)


def run(args) -> int:
    """Check, load the run (disturbed repetitions left out), predict, print."""
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

    s = check(args)
    data = build_frames([load_judged_run(s["run"])])
    if s["workloads"]:
        data.throughput = data.throughput[data.throughput["workload"].isin(s["workloads"])]
    steps = at_rates(data, s["links"], MEASURED_EFFICIENCY)
    if steps.empty:
        raise ProjectError(f"{s['run']}: no 2-rank loopback cell of Horovod or DDP with a "
                           "compute-only reference to project from (run the quick preset, "
                           "or --suites throughput,compute at --world-sizes 2)")
    crossed = (link_column(data.throughput) != LOOPBACK).any()  # the run's own link cells
    measured = hvd_vs_ddp(data.throughput, s["margin"]) if crossed else pd.DataFrame()
    pairs = predicted_pairs(steps, measured, s["margin"])
    print(render_text(steps, pairs, MEASURED_EFFICIENCY, s["margin"]))
    held = pairs["held"].dropna() if not pairs.empty else pd.Series(dtype=object)
    if len(held):
        err = steps["error"].dropna().abs()
        print(f"held: {int(held.sum())} of {len(held)} measured pairs; median step error "
              f"{float(np.median(err)):.0%} over {len(err)} measured cells")
    return 0

"""`hvd-vs-ddp project`: predict each library past the measured machine, and say so.

    hvd-vs-ddp project runs/<name> --devices 8,64,512 --devices-per-node 8 \
        --interconnect ib-hdr [--intra-node nvlink4] [--nics-per-node 8]
    hvd-vs-ddp project runs/<name> --devices 3,4 --interconnect measured
    hvd-vs-ddp project --compute-ms 97 --model resnet50 --batch-size 32 \
        --devices 16,64 --devices-per-node 8 --interconnect ib-edr --nics-per-node 4

Prints first, per size, the projected ratio Horovod/DDP with its band and a verdict in
the report's words (faster / equivalent / inconclusive and what would settle it), then a
table per workload (every figure a projection, with its 95% band from the inputs'
uncertainty and the model's own error), the bare model against what the run measured,
and the out-of-sample validation against published results; writes it all to
RUN_DIR/projection.json (or -o FILE), which `hvd-vs-ddp report` shows in its
"Projection" section. Nothing is fetched from the network. Bad input (an unknown
interconnect, a model it cannot analyse, a run without the data it needs) is one line
and exit 2, before any work.
"""
from __future__ import annotations

import datetime
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.projection import interconnects
from hvd_vs_ddp.projection.carried import CPU_NOTE, CPU_TO_GPU, carried, error_note
from hvd_vs_ddp.projection.label import LABEL, ProjectError
from hvd_vs_ddp.projection.model import (
    Inputs,
    Library,
    Links,
    Projected,
    calibrate,
    project,
)
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN

FORMAT, FORMAT_VERSION = "hvd-vs-ddp/projection", 2
DEFAULT_INTRA = "nvlink4"
VALIDATION_DRAWS = 100  # per published row, for the model's error and the table


NO_LINK = "none"  # the target's interconnect when every size fits in one node


def check(args) -> dict[str, Any]:
    """What needs several options together, judged before any work (argparse has parsed
    and checked each value: hvd_vs_ddp/cli/args.py); the settings to project with."""
    if args.devices is None:
        raise ProjectError("--devices is required: the device counts to predict, e.g. "
                           "8,64,512 (or --link-rate: two CPU hosts over a TCP link)")
    s: dict[str, Any] = {"devices": list(args.devices), "per_node": args.devices_per_node,
                         "nics": args.nics_per_node}
    if args.interconnect is None:  # one node: no link between nodes to name
        widest = max(s["devices"])
        if widest > s["per_node"]:
            raise ProjectError(
                f"--interconnect: {widest} devices at {s['per_node']} per node span "
                f"{-(-widest // s['per_node'])} nodes; name the link between them (a row of "
                "`python -m hvd_vs_ddp.projection.interconnects`, or measured)")
    measured = args.interconnect == interconnects.MEASURED
    s["links"] = None if measured else Links(
        interconnects.get(args.intra_node or DEFAULT_INTRA, "intra"),
        None if args.interconnect is None else interconnects.get(args.interconnect, "inter"),
        s["nics"], args.algorithm)
    if args.run_dir and args.compute_ms:
        raise ProjectError("give RUN_DIR (project from a run) or --compute-ms with --model "
                           "(from a published single-device figure), not both")
    if not (args.run_dir or args.compute_ms):
        raise ProjectError("give RUN_DIR (project from a run) or --compute-ms with --model "
                           "(from a published single-device figure)")
    if args.run_dir:
        run = Path(args.run_dir)
        manifest = RunFolder(run).manifest
        if not manifest.is_file():
            raise ProjectError(f"{run}: not a run directory (no {manifest.name} there)")
        for flag in ("model", "batch_size"):
            if getattr(args, flag) is not None:
                raise ProjectError(f"--{flag.replace('_', '-')} goes with --compute-ms; a "
                                   "run directory says its own model and batch")
    else:
        if measured:
            raise ProjectError("--interconnect measured needs a run directory (its "
                               "collectives suite); name an interconnect for --compute-ms")
        if not args.model:
            raise ProjectError("--compute-ms needs --model (whose gradients to schedule)")
        if args.workloads:
            raise ProjectError("--workloads picks a run's workloads; with --compute-ms "
                               "name the model with --model")
        s["compute_s"] = args.compute_ms / 1000
        s["batch"] = args.batch_size or 32
    s["workloads"] = list(args.workloads) if args.workloads else None
    _check_pipeline(args, s)  # the input pipeline on the host
    s["controller"] = args.controller
    s["optimizer"] = getattr(args, "optimizer", None) or "foreach"
    s["margin"] = DEFAULT_MARGIN if args.margin is None else args.margin
    s["draws"] = args.draws
    out = args.output or (str(RunFolder(Path(args.run_dir)).projection) if args.run_dir
                          else None)
    if out and Path(out).is_dir():
        raise ProjectError(f"--output {out}: is a directory; name a .json file")
    s["output"] = Path(out) if out else None
    _check_output(args, s)  # the output gate
    return s


# -- the input pipeline on the host --------------------------------------------
def _check_pipeline(args, s: dict[str, Any]) -> None:
    """--loader-cpu-ms (with --loader-workers, --host-cores) describes a host pipeline
    measured elsewhere; --input-on-device says there is none on the host."""
    cpu_ms = getattr(args, "loader_cpu_ms", None)
    workers = getattr(args, "loader_workers", None)
    on_device = getattr(args, "input_on_device", False)
    if on_device and cpu_ms:
        raise ProjectError("--input-on-device says nothing loads on the host; "
                           "--loader-cpu-ms describes a host pipeline: give one of them")
    if workers and not cpu_ms:
        raise ProjectError("--loader-workers goes with --loader-cpu-ms (the host pipeline's "
                           "CPU ms per batch)")
    s["loader_cpu_s"] = cpu_ms / 1000 if cpu_ms else None
    s["loader_workers"] = workers or 4
    s["host_cores"] = getattr(args, "host_cores", None)
    s["input_on_device"] = bool(on_device)


def _pipeline(s: dict[str, Any], inputs: Inputs, run_cores: int | None) -> None:
    """The workload's host pipeline from the flags where given (else the run's own,
    set by inputs.from_run), the target's cores per node, and whether it was measured."""
    from dataclasses import replace

    from hvd_vs_ddp.projection.host import HostPipeline

    cores = s["host_cores"] or (run_cores if run_cores else 8 * s["per_node"])
    if s["loader_cpu_s"]:
        inputs.host = HostPipeline(s["loader_cpu_s"], s["loader_workers"], float(cores),
                                   source="given (--loader-cpu-ms)")
        inputs.pipeline_measured = True
        inputs.notes.append(f"input pipeline on the host (given): {s['loader_cpu_s'] * 1000:g}"
                            f" CPU ms a batch over {s['loader_workers']} workers per rank, "
                            f"{cores} cores per node")
    elif inputs.host is not None and s["host_cores"]:
        inputs.host = replace(inputs.host, node_cores=float(s["host_cores"]))
    if s["input_on_device"]:
        inputs.host, inputs.pipeline_measured = None, True
        inputs.notes.append("input not loaded on the host (--input-on-device)")
# -- end of the input pipeline on the host


# -- the output gate (hvd_vs_ddp/common/outputs.py) ----------------------------
def _inputs(args) -> tuple[str, ...]:
    """What the projection is made from, as its file records it: the run, resolved."""
    return (str(Path(args.run_dir).resolve()),) if args.run_dir else \
        (f"published:{args.model}:{args.compute_ms}ms",)


def _check_output(args, s: dict[str, Any]) -> None:
    """The output may replace only a projection of the same inputs, never a manifest, a
    cell's results, a report or a file nobody recognises, and lie inside a run directory
    only as that run's own projection.json."""
    from hvd_vs_ddp.common import output_formats, outputs

    s["inputs"] = _inputs(args)
    if s["output"] is None:
        return
    try:
        outputs.check_one(outputs.Output(s["output"], output_formats.PROJECTION, s["inputs"]))
    except outputs.OutputRefused as exc:
        raise ProjectError(f"--output {exc}" if args.output else str(exc)) from None
# -- end of the output gate


def _standalone(args, s) -> list[tuple[str, Inputs, list]]:
    from hvd_vs_ddp.projection.layout import model_layout

    layout = model_layout(args.model, s["batch"])
    libs = [Library("ddp", "ddp"), Library("horovod", "horovod")]
    inputs = Inputs(layout, s["batch"], np.array([s["compute_s"]]), libs, s["links"],
                    s["per_node"])
    inputs.notes.append(f"compute {s['compute_s'] * 1000:g} ms per step on one device "
                        "(given); libraries at today's defaults: DDP 25 MiB buckets, "
                        "Horovod 128 MiB fusion and 1 ms cycle, NCCL >= 2.10; optimizer "
                        f"{s['optimizer']} (--optimizer)")
    return [(args.model, inputs, [])]


def _band(values: list[float], scale: float = 1.0) -> list[float]:
    return [round(v * scale, 6) for v in values]


def _rows(projected: list[Projected]) -> list[dict]:
    return [{"library": p.library, "devices": p.devices, "nodes": p.nodes,
             "step_ms": _band(p.step_s.as_list(), 1000),
             "samples_per_s": _band(p.samples_per_s.as_list()),
             "efficiency": _band(p.efficiency.as_list()),
             "exposed_comm_ms": _band(p.exposed_comm_s.as_list(), 1000),
             "samples_per_s_inputs_only": _band(p.inputs_only.as_list())
             if p.inputs_only else None,
             "terms_ms": {k: round(v * 1000, 4) for k, v in p.terms.items()},
             "allreduces": p.ops} for p in projected]


def _library_settings(lib: Library) -> dict:
    d: dict[str, Any] = {"label": lib.label, "kind": lib.kind}
    if lib.kind == catalog.DDP:
        d["bucket_mb"] = lib.bucket_bytes / 2**20
        if lib.bucket_sizes:
            d["bucket_sizes"] = list(lib.bucket_sizes)
    else:
        d.update(fusion_mb=lib.fusion_bytes / 2**20, cycle_ms=lib.cycle_s * 1000,
                 hierarchical=lib.hierarchical)
    if lib.measured is not None:
        d["alpha_us"] = lib.measured.alpha * 1e6
        d["beta_gb_s"] = lib.measured.beta / 1e9
    return d


def run(args) -> int:
    """`hvd-vs-ddp project`: check, gather the inputs, project each workload, write."""
    from hvd_vs_ddp.projection import against_published, validation

    s = check(args)
    if args.run_dir:
        from hvd_vs_ddp.projection.inputs import from_run
        items = from_run(Path(args.run_dir), s["links"], s["per_node"], s["workloads"])
    else:
        items = _standalone(args, s)
    doc = _document(args, s)
    model_error = against_published.current_error(VALIDATION_DRAWS) if s["links"] is not None \
        else None
    for name, inputs, measured in items:
        _pipeline(s, inputs, inputs.run_cores)  # the input pipeline on the host
        inputs.controller = s["controller"]
        inputs.optimizer = s["optimizer"]  # the host tail's per-gradient part
        inputs.gpu = s["links"] is not None
        inputs.model_error = model_error
        if model_error is not None and inputs.run_on_cpu:  # CPU run, GPU target
            inputs.model_error = replace(model_error, distance=CPU_TO_GPU)
            inputs.notes.append(CPU_NOTE)
        inputs.notes.append(error_note(inputs.model_error))
        doc["workloads"].append(_project_workload(args, s, name, inputs, measured))
        if inputs.model_error is not None:  # after calibrating: its size is known; the
            inputs.notes.append(carried(inputs, s["devices"]))  # document holds this list
    doc["validation"] = validation.as_json(against_published.loso(VALIDATION_DRAWS,
                                                                  growth=True))
    print(render_text(doc))
    if s["output"] is not None:
        from hvd_vs_ddp.results_schema.io import write_json_atomic
        s["output"].parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(s["output"], doc, kind=FORMAT, inputs=s["inputs"])  # the output gate
        print(s["output"])
    return 0


def _document(args, s: dict) -> dict[str, Any]:
    """projection.json's head: what was asked, of what, for which cluster."""
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "label": LABEL,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": ["hvd-vs-ddp", *sys.argv[1:]],
        "source": {"run": args.run_dir, "compute_ms": s.get("compute_s", 0) * 1000 or None,
                   "model": args.model, "batch_size": s.get("batch")},
        "target": {"devices": s["devices"], "devices_per_node": s["per_node"],
                   "interconnect": (NO_LINK if args.interconnect is None
                                    else interconnects.canonical(args.interconnect)),
                   "intra_node": None if s["links"] is None else s["links"].intra.name,
                   "nics_per_node": s["nics"], "algorithm": args.algorithm,
                   "links": [r for r in interconnects.table_rows() if s["links"] is not None
                             and r["name"] in (s["links"].intra.name, getattr(
                                 s["links"].inter, "name", None))]},
        "calibrated": not args.no_calibrate, "workloads": [],
        "inputs": list(s["inputs"])}  # what the output gate compares


def _project_workload(args, s: dict, name: str, inputs, measured) -> dict[str, Any]:
    """One workload: the bare model at the run's own sizes (checked against what it
    measured), the calibration on the largest measured size, the projection and its
    comparison."""
    from hvd_vs_ddp.common.log import log
    from hvd_vs_ddp.projection.verdict import compare

    log.info(f"projecting {name}: {len(inputs.libraries)} libraries x "
             f"{len(s['devices'])} sizes, {s['draws']} draws each")
    in_sample = project(inputs, sorted({m.devices for m in measured}), draws=s["draws"]) \
        if measured else []  # the bare model at the run's own sizes, before calibrating
    if not args.no_calibrate:
        largest: dict[str, tuple[int, float]] = {}
        for m in measured:
            if m.devices > 1 and m.devices >= largest.get(m.library, (0, 0.0))[0]:
                largest[m.library] = (m.devices, m.step_s)
        inputs.notes += calibrate(inputs, largest, draws=s["draws"])
    projected = project(inputs, s["devices"], draws=s["draws"])
    comparison = compare(projected, inputs, s["margin"], from_run=bool(args.run_dir),
                         calibrated=not args.no_calibrate and any(
                             m.devices > 1 for m in measured))
    checks = []
    for m in measured:
        p = next(p for p in in_sample if p.library == m.library and p.devices == m.devices)
        checks.append({"library": m.library, "devices": m.devices,
                       "measured_samples_per_s": m.samples_per_s,
                       "projected_samples_per_s": _band(p.samples_per_s.as_list()),
                       "error": p.samples_per_s.median / m.samples_per_s - 1})
    compute = np.percentile(inputs.compute_s, [50, 2.5, 97.5]) * 1000
    return {"workload": name, "per_device_batch": inputs.batch,
            "compute_ms": _band(list(compute)), "notes": inputs.notes,
            "layout": {"gradients": len(inputs.layout.grads),
                       "grad_mb": inputs.layout.grad_bytes / 2**20,
                       "source": inputs.layout.source},
            "libraries": [_library_settings(lib) for lib in inputs.libraries],
            "comparison": comparison, "rows": _rows(projected), "in_sample": checks}


def render_text(doc: dict) -> str:
    t = doc["target"]
    link = ("the run's own allreduce fits (measured)" if t["interconnect"] == "measured" else
            f"{t['intra_node']} inside one node" if t["interconnect"] == NO_LINK else
            f"{t['intra_node']} inside nodes, {t['nics_per_node']} x {t['interconnect']} "
            "between")
    lines = [f"== {doc['label']} ==",
             f"target: {', '.join(map(str, t['devices']))} devices, {t['devices_per_node']} "
             f"per node; {link}"]
    for w in doc["workloads"]:
        if w.get("comparison"):
            lines.append(f"\n{w['workload']}: Horovod / DDP, projected (margin "
                         f"±{w['comparison'][0]['margin']:.0%}):")
            lines += [f"  at {c['devices']} device{'' if c['devices'] == 1 else 's'} "
                      f"({c['nodes']} node{'' if c['nodes'] == 1 else 's'}): {c['text']}"
                      for c in w["comparison"]]
    for w in doc["workloads"]:
        c = w["compute_ms"]
        lines.append(f"\n{w['workload']}: batch {w['per_device_batch']} per device, compute "
                     f"{c[0]:.4g} ms [{c[1]:.4g}-{c[2]:.4g}], {w['layout']['gradients']} "
                     f"gradients ({w['layout']['grad_mb']:.1f} MiB)")
        lines += [f"  note: {n}" for n in w["notes"]]
        lines.append(f"  {'library':28s} {'devices':>7s} {'samples/s [95% band]':>30s} "
                     f"{'efficiency':>18s} {'exposed comm ms':>16s}")
        for r in w["rows"]:
            sps, eff = r["samples_per_s"], r["efficiency"]
            lines.append(f"  {r['library']:28s} {r['devices']:7d} {sps[0]:12.4g} "
                         f"[{sps[1]:.4g}-{sps[2]:.4g}] {eff[0]:8.1%} [{eff[1]:.0%}-{eff[2]:.0%}] "
                         f"{r['exposed_comm_ms'][0]:10.3g}")
        for ch in w["in_sample"]:
            lines.append(f"  bare model at the run's size: {ch['library']} at "
                         f"{ch['devices']}: measured {ch['measured_samples_per_s']:.4g}/s, "
                         "projected "
                         f"{ch['projected_samples_per_s'][0]:.4g}/s ({ch['error']:+.1%})")
    v = doc["validation"]
    lines.append(f"\nvalidation: {v['summary_line']} "
                 "(python -m hvd_vs_ddp.projection.validation lists every row)")
    return "\n".join(lines)

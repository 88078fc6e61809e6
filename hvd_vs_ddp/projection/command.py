"""`hvd-vs-ddp project`: predict each library past the measured machine, and say so.

    hvd-vs-ddp project runs/<name> --devices 8,64,512 --devices-per-node 8 \
        --interconnect ib-hdr [--intra-node nvlink4] [--nics-per-node 8]
    hvd-vs-ddp project runs/<name> --devices 3,4 --interconnect measured
    hvd-vs-ddp project --compute-ms 97 --model resnet50 --batch-size 32 \
        --devices 16,64 --devices-per-node 8 --interconnect ib-edr --nics-per-node 4

Prints a table per workload (every figure a projection, with its 95% band from the
inputs' uncertainty), the bare model against what the run measured, and the
validation against published results; writes it all to RUN_DIR/projection.json (or
-o FILE), which `hvd-vs-ddp report` shows in its "Projection" section. Nothing is
fetched from the network. Bad input (an unknown interconnect, a model it cannot
analyse, a run without the data it needs) is one line and exit 2, before any work.
"""
from __future__ import annotations

import datetime
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.projection import interconnects
from hvd_vs_ddp.projection.collectives import ALGORITHMS
from hvd_vs_ddp.projection.model import Inputs, Library, Links, Projected, calibrate, project

FORMAT, FORMAT_VERSION = "hvd-vs-ddp/projection", 1
LABEL = "PROJECTION: predicted by a model, not measured"
DEFAULT_INTRA = "nvlink4"
MAX_DEVICES = 1_000_000
MAX_DRAWS = 20_000


class ProjectError(InputError):
    pass


def _int_list(flag: str, text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(not 1 <= v <= MAX_DEVICES for v in values):
        raise ProjectError(f"{flag} {text!r}: expected comma-separated integers from 1 to "
                           f"{MAX_DEVICES}, e.g. {flag} 8,64,512")
    return sorted(set(values))


def _int(flag: str, text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(value) != text.strip():
        raise ProjectError(f"{flag} {text!r}: expected an integer >= 1")
    return value


def _positive(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < math.inf):
        raise ProjectError(f"{flag} {text!r}: expected a number > 0")
    return value


def check(args) -> dict[str, Any]:
    """Every option checked before any work; the settings to project with."""
    s: dict[str, Any] = {"devices": _int_list("--devices", args.devices),
                         "per_node": _int("--devices-per-node", args.devices_per_node, 8),
                         "nics": _int("--nics-per-node", args.nics_per_node, 1)}
    if args.algorithm not in ALGORITHMS:
        raise ProjectError(f"--algorithm {args.algorithm!r}: one of {', '.join(ALGORITHMS)}")
    measured = args.interconnect == interconnects.MEASURED
    s["links"] = None if measured else Links(
        interconnects.get(args.intra_node or DEFAULT_INTRA, "intra"),
        interconnects.get(args.interconnect, "inter"), s["nics"], args.algorithm)
    if args.run_dir and args.compute_ms:
        raise ProjectError("give RUN_DIR (project from a run) or --compute-ms with --model "
                           "(from a published single-device figure), not both")
    if not (args.run_dir or args.compute_ms):
        raise ProjectError("give RUN_DIR (project from a run) or --compute-ms with --model "
                           "(from a published single-device figure)")
    if args.run_dir:
        run = Path(args.run_dir)
        if not (run / "manifest.json").is_file():
            raise ProjectError(f"{run}: not a run directory (no manifest.json there)")
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
        s["compute_s"] = _positive("--compute-ms", args.compute_ms) / 1000
        s["batch"] = _int("--batch-size", args.batch_size, 32)
    s["workloads"] = [w.strip() for w in args.workloads.split(",") if w.strip()] \
        if args.workloads else None
    s["draws"] = _int("--draws", args.draws, 400)
    if s["draws"] > MAX_DRAWS:
        raise ProjectError(f"--draws {args.draws}: at most {MAX_DRAWS} (400 gives a 95% band "
                           "to about 1%)")
    out = args.output or (str(Path(args.run_dir) / "projection.json") if args.run_dir else None)
    if out and Path(out).is_dir():
        raise ProjectError(f"--output {out}: is a directory; name a .json file")
    s["output"] = Path(out) if out else None
    _check_output(args, s)  # issue 27: the output gate
    return s


# -- issue 27: the output gate (hvd_vs_ddp/common/outputs.py) ------------------
def _inputs(args) -> tuple[str, ...]:
    """What the projection is made from, as its file records it: the run, resolved."""
    return (str(Path(args.run_dir).resolve()),) if args.run_dir else \
        (f"published:{args.model}:{args.compute_ms}ms",)


def _check_output(args, s: dict[str, Any]) -> None:
    """The output may replace only a projection of the same inputs, never a manifest, a
    cell's results, a report or a file nobody recognises, and lie inside a run directory
    only as that run's own projection.json."""
    from hvd_vs_ddp.common import outputs

    s["inputs"] = _inputs(args)
    if s["output"] is None:
        return
    try:
        outputs.check_one(outputs.Output(s["output"], outputs.PROJECTION, s["inputs"]))
    except outputs.OutputRefused as exc:
        raise ProjectError(f"--output {exc}" if args.output else str(exc)) from None
# -- end of issue 27


def _standalone(args, s) -> list[tuple[str, Inputs, list]]:
    from hvd_vs_ddp.projection.layout import model_layout

    layout = model_layout(args.model, s["batch"])
    libs = [Library("ddp", "ddp"), Library("horovod", "horovod")]
    inputs = Inputs(layout, s["batch"], np.array([s["compute_s"]]), libs, s["links"],
                    s["per_node"])
    inputs.notes.append(f"compute {s['compute_s'] * 1000:g} ms per step on one device "
                        "(given); libraries at today's defaults: DDP 25 MiB buckets, "
                        "Horovod 128 MiB fusion and 1 ms cycle")
    return [(args.model, inputs, [])]


def _band(values: list[float], scale: float = 1.0) -> list[float]:
    return [round(v * scale, 6) for v in values]


def _rows(projected: list[Projected]) -> list[dict]:
    return [{"library": p.library, "devices": p.devices, "nodes": p.nodes,
             "step_ms": _band(p.step_s.as_list(), 1000),
             "samples_per_s": _band(p.samples_per_s.as_list()),
             "efficiency": _band(p.efficiency.as_list()),
             "exposed_comm_ms": _band(p.exposed_comm_s.as_list(), 1000),
             "allreduces": p.ops} for p in projected]


def _library_settings(lib: Library) -> dict:
    d: dict[str, Any] = {"label": lib.label, "kind": lib.kind}
    if lib.kind == "ddp":
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
    from hvd_vs_ddp.common.log import log
    from hvd_vs_ddp.projection import validation

    s = check(args)
    if args.run_dir:
        from hvd_vs_ddp.projection.inputs import from_run
        items = from_run(Path(args.run_dir), s["links"], s["per_node"], s["workloads"])
    else:
        items = _standalone(args, s)
    doc: dict[str, Any] = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "label": LABEL,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": ["hvd-vs-ddp", *sys.argv[1:]],
        "source": {"run": args.run_dir, "compute_ms": s.get("compute_s", 0) * 1000 or None,
                   "model": args.model, "batch_size": s.get("batch")},
        "target": {"devices": s["devices"], "devices_per_node": s["per_node"],
                   "interconnect": args.interconnect,
                   "intra_node": None if s["links"] is None else s["links"].intra.name,
                   "nics_per_node": s["nics"], "algorithm": args.algorithm,
                   "links": [r for r in interconnects.table_rows() if s["links"] is not None
                             and r["name"] in (s["links"].intra.name, s["links"].inter.name)]},
        "calibrated": not args.no_calibrate, "workloads": [],
        "inputs": list(s["inputs"])}  # issue 27: what the output gate compares
    for name, inputs, measured in items:
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
        checks = []
        for m in measured:
            p = next(p for p in in_sample if p.library == m.library and p.devices == m.devices)
            checks.append({"library": m.library, "devices": m.devices,
                           "measured_samples_per_s": m.samples_per_s,
                           "projected_samples_per_s": _band(p.samples_per_s.as_list()),
                           "error": p.samples_per_s.median / m.samples_per_s - 1})
        compute = np.percentile(inputs.compute_s, [50, 2.5, 97.5]) * 1000
        doc["workloads"].append({
            "workload": name, "per_device_batch": inputs.batch,
            "compute_ms": _band(list(compute)), "notes": inputs.notes,
            "layout": {"gradients": len(inputs.layout.grads),
                       "grad_mb": inputs.layout.grad_bytes / 2**20,
                       "source": inputs.layout.source},
            "libraries": [_library_settings(lib) for lib in inputs.libraries],
            "rows": _rows(projected), "in_sample": checks})
    checked = validation.check_all(draws=50)
    doc["validation"] = {"median_abs_error": validation.median_abs_error(checked),
                         "goal": validation.GOAL,
                         "rows": [{"id": c.id, "library": c.library, "model": c.model,
                                   "devices": c.devices, "unit": c.unit,
                                   "published": c.published, "projected": c.predicted,
                                   "error": c.error, "source": c.source} for c in checked]}
    print(render_text(doc))
    if s["output"] is not None:
        from hvd_vs_ddp.results_schema.io import write_json_atomic
        s["output"].parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(s["output"], doc, kind=FORMAT, inputs=s["inputs"])  # issue 27
        print(s["output"])
    return 0


def render_text(doc: dict) -> str:
    t = doc["target"]
    link = "the run's own allreduce fits (measured)" if t["interconnect"] == "measured" else \
        f"{t['intra_node']} inside nodes, {t['nics_per_node']} x {t['interconnect']} between"
    lines = [f"== {doc['label']} ==",
             f"target: {', '.join(map(str, t['devices']))} devices, {t['devices_per_node']} "
             f"per node; {link}"]
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
    lines.append(f"\nvalidation against {len(v['rows'])} published results: median absolute "
                 f"error {v['median_abs_error']:.1%} (goal {v['goal']:.0%}); "
                 "python -m hvd_vs_ddp.projection.validation lists every row")
    return "\n".join(lines)

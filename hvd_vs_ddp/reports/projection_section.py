"""The report's "Projection" section: what `hvd-vs-ddp project` predicted for a run.

`hvd-vs-ddp project RUN_DIR ...` writes RUN_DIR/projection.json; a report of that run
shows it here, apart from every measured figure and labelled a projection: the
target, the inputs it used, each library's projected samples/s and efficiency with
their bands, the bare model against the run's own measurements and the model's
validation against published results. A projection.json that cannot be read is one
note, never a failed report.

    from hvd_vs_ddp.reports.projection_section import projection_section
    section = projection_section([run.path for run in runs])   # Section or None
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.tables import Table

FORMAT = "hvd-vs-ddp/projection"


def _band(v: list[float], fmt: str = ".4g") -> str:
    return f"{v[0]:{fmt}} [{v[1]:{fmt}}–{v[2]:{fmt}}]"


def _pct(v: list[float]) -> str:
    return f"{v[0]:.0%} [{v[1]:.0%}–{v[2]:.0%}]"


def _read(path: Path) -> tuple[dict | None, str | None]:
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return None, f"{path}: not an hvd-vs-ddp projection (format is not {FORMAT!r})"
        if doc.get("format_version") != 2:
            return None, (f"{path}: projection format_version {doc.get('format_version')!r} "
                          "(this report reads 2): run hvd-vs-ddp project again")
        for key in ("target", "workloads", "validation"):
            if key not in doc:
                raise KeyError(key)
        return doc, None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"{path}: unreadable projection ({type(exc).__name__}: {exc})"


def _run_blocks(name: str, doc: dict) -> list:
    t = doc["target"]
    link = ("each library's own allreduce fit to this run (measured)"
            if t["interconnect"] == "measured" else
            f"{t['intra_node']} inside one node, allreduce {t['algorithm']}"
            if t["interconnect"] == "none" else
            f"{t['intra_node']} inside nodes, {t['nics_per_node']} x {t['interconnect']} "
            f"between nodes, allreduce {t['algorithm']}")
    blocks: list = [Notes([
        f"{doc.get('label', 'PROJECTION')}. Run {name}: "
        f"{', '.join(map(str, t['devices']))} devices at {t['devices_per_node']} per node; "
        f"{link}. Command: {' '.join(doc.get('command') or [])}"])]
    for w in doc["workloads"]:
        if w.get("comparison"):  # the headline: which library, by how much, how sure
            blocks.append(Table(
                f"Horovod / DDP, projected: {w['workload']} (not measured)",
                pd.DataFrame([{"devices": c["devices"], "nodes": c["nodes"],
                               "ratio [95% band]": _band(c["ratio"], ".3f"),
                               "verdict": c["verdict"],
                               "input pipeline": c.get("input_pipeline", ""),
                               "answer": c["text"]}
                              for c in w["comparison"]]),
                f"Best Horovod over best DDP, projected samples/s; the band carries the "
                f"inputs and the model's own error, grown with the scale factor as "
                f"measured by extrapolation on published results (docs/projection.md); "
                f"where only that growth keeps a verdict from being firm, the answer says "
                f"so; verdicts in the report's words with the same margin "
                f"(±{w['comparison'][0]['margin']:.0%})."))
    for w in doc["workloads"]:
        rows = [{"library": r["library"], "devices": r["devices"], "nodes": r["nodes"],
                 "samples/s [95% band]": _band(r["samples_per_s"]),
                 "efficiency [95% band]": _pct(r["efficiency"]),
                 "step ms": f"{r['step_ms'][0]:.4g}",
                 "exposed comm ms": f"{r['exposed_comm_ms'][0]:.3g}",
                 "allreduces": r["allreduces"]} for r in w["rows"]]
        c = w["compute_ms"]
        note = (f"Inputs: compute {_band(c)} ms per step at batch {w['per_device_batch']} "
                f"per device; {w['layout']['gradients']} gradients, "
                f"{w['layout']['grad_mb']:.1f} MiB ({w['layout']['source']}); "
                + "; ".join(_settings(lib) for lib in w["libraries"]) + ". "
                + " ".join(w.get("notes") or []))
        blocks.append(Table(f"Projected: {w['workload']} (not measured)", pd.DataFrame(rows),
                            note))
        if w.get("in_sample"):
            blocks.append(Table(
                f"Bare model at the run's own sizes: {w['workload']}",
                pd.DataFrame([{"library": ch["library"], "devices": ch["devices"],
                               "measured samples/s": f"{ch['measured_samples_per_s']:.4g}",
                               "projected samples/s": _band(ch["projected_samples_per_s"]),
                               "error": f"{ch['error']:+.1%}"} for ch in w["in_sample"]]),
                "The model before calibration, at the world sizes this run measured: how "
                "far it is from the measurements it was built from. The projection above "
                "carries the difference at the largest size forward (docs/projection.md)."))
    v = doc["validation"]
    h2h = [r for r in v["rows"] if "ratio_published" in r]
    if h2h:
        blocks.append(Table(
            "Validation: published head-to-head results",
            pd.DataFrame([{"row": r["id"] + ("" if r.get("in_scope", True) else
                                            " (out of scope)"),
                           "devices": r["devices"],
                           **{f"{x['library']} error": f"{x['error']:+.1%}"
                              for x in r["values"]},
                           "published ratio": f"{r['ratio_published']:.3f}",
                           "projected ratio": _band(r["ratio"], ".3f"),
                           "projected verdict": r["verdict"],
                           "published verdict": r["published_verdict"],
                           "repeats": r.get("config_verdict", ""),
                           "agree": "yes" if r["agrees"] else "no"} for r in h2h]),
            v.get("summary_line", "") + " Sources and assumptions: "
            "hvd_vs_ddp/projection/data/head_to_head.csv, docs/projection.md."))
    single = [r for r in v["rows"] if "ratio_published" not in r]
    blocks.append(Table(
        "Validation against published results (one library each)",
        pd.DataFrame([{"row": r["id"], "devices": r["devices"],
                       "published": f"{x['published']:.3g}",
                       "projected": _band(x["projected"], ".3g"),
                       "error": f"{x['error']:+.1%}", "source": r["source"]}
                      for r in single for x in r["values"]]),
        "Units: samples/s per GPU, or scaling efficiency for Horovod's 128- and 512-GPU "
        "rows; leave one source out. " + v.get("scale_line", "") + " Sources and "
        "assumptions: hvd_vs_ddp/projection/data/published.csv, docs/projection.md."))
    return blocks


def _settings(lib: dict) -> str:
    if lib["kind"] == "ddp":
        s = f"{lib['label']}: buckets of {lib['bucket_mb']:g} MiB"
    else:
        s = (f"{lib['label']}: fusion {lib['fusion_mb']:g} MiB, cycle {lib['cycle_ms']:g} ms"
             + (", hierarchical" if lib.get("hierarchical") else ""))
    if "alpha_us" in lib:
        s += f" (fit: alpha {lib['alpha_us']:.3g} µs, beta {lib['beta_gb_s']:.3g} GB/s)"
    return s


def projection_section(run_dirs: list[tuple[str, Path]]) -> Section | None:
    """The section for the runs that have a projection.json, else None."""
    blocks: list = []
    for name, path in run_dirs:
        f = RunFolder(Path(path)).projection
        if not f.exists():
            continue
        doc, why = _read(f)
        blocks += [Notes([why or f"{f}: unreadable"])] if doc is None \
            else _run_blocks(name, doc)
    return Section("Projection", blocks) if blocks else None

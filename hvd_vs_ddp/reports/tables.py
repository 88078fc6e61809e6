"""Report tables: pandas frames of display strings with a title and a note.

Numbers are formatted here once (samples/s with 1 decimal, step times in ms with 2,
ratios and CIs with 3), so the HTML and the Markdown show identical text.

    from hvd_vs_ddp.reports.tables import throughput_table
    t = throughput_table(add_scaling(data.throughput))   # Table(title, df, note)
    python -m hvd_vs_ddp.reports.tables RUN_DIR...                   # prints every table
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.frames import Data

DASH = "–"
OP_ORDER = {"allreduce": 0, "allgather": 1, "broadcast": 2}


@dataclass
class Table:
    title: str
    df: pd.DataFrame
    note: str = ""


def sps(v: float) -> str:
    return "" if pd.isna(v) else f"{v:.1f}"


def ms(v: float) -> str:
    return "" if pd.isna(v) else f"{v * 1e3:.2f}"


def r3(v: float) -> str:
    return "" if pd.isna(v) else f"{v:.3f}"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}" if unit == "B" else f"{n:.4g} {unit}"
        n /= 1024
    return f"{n:g}"


def kv(d: dict | None, keep_none: bool = False) -> str:
    if not d:
        return ""
    return "; ".join(f"{k}={json.dumps(v) if isinstance(v, (dict, list)) else v}"
                     for k, v in d.items() if keep_none or v is not None)


def plain(v) -> str:
    """A recorded value for a reader: a list joined, a file by its name (no machine path)."""
    if isinstance(v, (list, tuple)):
        return ", ".join(plain(x) for x in v)
    s = str(v)
    return s.rsplit("/", 1)[-1] if "/" in s and " " not in s else s


def rel(v, run_dir: Path | None):
    """A recorded value with no absolute path of the machine that made the run: a file
    under the runs' folder relative to the run folder (cells/x.json, ..), any other by
    its name (…/pid.4115); anything else as it is."""
    if not isinstance(v, str) or not v.startswith("/") or run_dir is None:
        return v
    p, root = Path(v), Path(run_dir).resolve()
    if p.is_relative_to(root.parent):
        return os.path.relpath(p, root)
    return f"…/{p.name}" if p.name else v


def kv_rel(d: dict | None, run_dir: Path | None) -> str:
    """kv() with every value through rel()."""
    return kv({k: rel(v, run_dir) for k, v in (d or {}).items()})


def throughput_table(tp: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "case": r["case"], "backend": r["series"],
             "world size": r["world_size"], "global batch": r["global_batch"],
             "steps": r["n_steps"], "median step (ms)": ms(r["step_median"]),
             "step IQR (ms)": f"{ms(r['step_q25'])}{DASH}{ms(r['step_q75'])}",
             "median samples/s": sps(r["sps_median"]),
             "samples/s IQR": f"{sps(r['sps_q25'])}{DASH}{sps(r['sps_q75'])}",
             "scaling eff.": "" if pd.isna(r.get("efficiency", np.nan))
             else f"{r['efficiency']:.2f}",
             "max RSS (MB)": "" if pd.isna(r["max_rss_mb"]) else f"{r['max_rss_mb']:.0f}"}
            for _, r in tp.sort_values(["run", "case", "world_size"]).iterrows()]
    df = pd.DataFrame(rows)
    if not tp.empty and "startup_s" in tp and tp["startup_s"].notna().any():
        # launch to suites configured, slowest rank: spawn's cost against torchrun
        df["start-up (s)"] = [f"{v:.2f}" if not pd.isna(v) else "" for v in
                              tp.sort_values(["run", "case", "world_size"])["startup_s"]]
    if not tp.empty and tp["cuda_max_mb"].notna().any():
        df["max CUDA alloc (MB)"] = [f"{v:.0f}" if not pd.isna(v) else "" for v in
                                     tp.sort_values(["run", "case", "world_size"])["cuda_max_mb"]]
    return Table("Throughput per cell", df,
                 "Medians and IQRs over timed steps (each step: the slowest rank). "
                 "Scaling efficiency = samples/s / (world size x the np=1 samples/s). "
                 "Start-up: from the launch to the slowest rank's suites being configured "
                 "(process start, imports), apart from the steady-state throughput.")


def _pair_note(r) -> str:
    return ", ".join(x for x in (
        "1 rank: overhead" if r["scope"] == "overhead" else "",
        "indicative" if r["strength"] == "indicative" else "",
        f"~{int(r['reps_needed'])} reps to settle" if not pd.isna(r["reps_needed"]) else "",
        _resolves(r), "pace-adjusted" if r.get("reading") == "adjusted" else "")
        if x)


def _resolves(r) -> str:
    """An inconclusive pair's resolution: the smallest difference its spread detects."""
    v = r.get("judged")
    if r["verdict"] != "inconclusive" or not isinstance(v, verdicts.Verdict):
        return ""
    small = verdicts.detectable(v.ci, v.margin)
    return f"detects >= {small:.0%}" if small is not None else ""


def comparison_table(cmp: pd.DataFrame, margin: float) -> Table:
    """One row a pair, short cells: the verdict's word and the ratio with its interval;
    what the words mean is said once, below the table."""
    many = not cmp.empty and cmp["run"].nunique() > 1
    rows = [{**({"run": r["run"]} if many else {}), "case": r["case"],
             "ranks": r["world_size"], "horovod": r["horovod"], "ddp": r["ddp"],
             "hvd samples/s": sps(r["hvd_sps"]), "ddp samples/s": sps(r["ddp_sps"]),
             "hvd/ddp [95%]": f"{r3(r['ratio'])} [{r3(r['lo'])}{DASH}{r3(r['hi'])}]",
             "reps": r["reps"],
             "verdict": (f"less overhead: {r['faster']}" if r["faster"] and r["scope"] ==
                         "overhead" else f"faster: {r['faster']}" if r["faster"]
                         else r["verdict"]),
             "note": _pair_note(r)}
            for _, r in cmp.iterrows()]
    return Table("Horovod / DDP throughput, every pair", pd.DataFrame(rows),
                 "hvd/ddp: the ratio of median samples/s (all timed steps of all "
                 "repetitions), above 1 when Horovod is faster; [95%]: its interval from a "
                 "two-level bootstrap (repetitions, then steps within each; 2000 resamples, "
                 "fixed seed), so it includes run-to-run variation when there are 2 or more "
                 f"repetitions (reps). Verdicts with a margin of ±{margin * 100:g}%: "
                 "'faster' when the interval lies beyond it, 'equivalent' when inside "
                 f"[{1 / (1 + margin):.3f}, {1 + margin:.3f}], else 'inconclusive'. Notes: "
                 "'1 rank: overhead': nothing is communicated at 1 rank, so the ratio is "
                 "framework overhead, not a communication result; 'indicative': one "
                 "repetition, a within-run interval; '~N reps to settle': the repetitions "
                 "an inconclusive pair would need; 'detects >= D%': the smallest difference "
                 "an interval as wide as this pair's would have called 'faster'; "
                 "'pace-adjusted': each process's measured pace was taken out of this "
                 "pair's verdict (the section 'Where the variance comes from' says how; "
                 "the unadjusted interval is in verdicts.json).")


def tails_table(tl: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "case": r["case"], "backend": r["series"],
             "world size": r["world_size"], "repetitions": r["reps"], "steps": r["steps"],
             "p50 (ms)": ms(r["p50"]), "p95 (ms)": ms(r["p95"]), "p99 (ms)": ms(r["p99"]),
             "CV": "" if pd.isna(r["cv"]) else f"{r['cv']:.3f}",
             "first step (ms)": ms(r["first"]), "first / p50": f"{r['first_x']:.2f}"}
            for _, r in tl.sort_values(["run", "case", "world_size"]).iterrows()]
    return Table("Step-time tails", pd.DataFrame(rows),
                 "Percentiles and CV (sd/mean) over the timed steps after the first of every "
                 "repetition; the first timed step (median over repetitions) is shown apart.")


def straggler_table(st: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "case": r["case"], "backend": r["series"],
             "world size": r["world_size"], "rank": r["rank"],
             "slowest in": f"{r['slowest_steps']}/{r['steps']} ({r['share'] * 100:.0f}%)",
             "median excess when slowest (ms)": ms(r["excess"]),
             "straggler": "YES" if r["straggler"] else "no"} for _, r in st.iterrows()]
    return Table("Stragglers: which rank is the slowest", pd.DataFrame(rows),
                 "Per rank: the steps in which it was the slowest rank and its median excess "
                 "over the other ranks then. Named a straggler when slowest in most steps "
                 "and a binomial test against 1/world size gives p < 0.01.")


def before_after_table(ba: pd.DataFrame, run_a: str, run_b: str) -> Table:
    rows = [{"case": r["case"], "backend": r["backend"], "world size": r["world_size"],
             "suite": r["suite"], "A samples/s": sps(r["a_sps"]), "B samples/s": sps(r["b_sps"]),
             "ratio B/A": r3(r["ratio"]), "95% interval": f"{r3(r['lo'])}{DASH}{r3(r['hi'])}",
             "verdict": r["verdict"]} for _, r in ba.iterrows()]
    return Table(f"Run B ({run_b}) vs run A ({run_a})", pd.DataFrame(rows),
                 "Matching cells: same suite, backend, launcher, world size, workload and "
                 "knobs. Ratio of median samples/s, 95% two-level bootstrap interval and "
                 "margin verdict as above.")


def exposed_table(ex: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "case": r["case"], "backend": r["series"],
             "world size": r["world_size"], "median step (ms)": ms(r["step_median"]),
             "compute only (ms)": ms(r["compute_s"]),
             "compute-only processes": r["compute_ranks"], "exposed comm (ms)": ms(r["exposed_s"]),
             "exposed share": f"{r['exposed_frac'] * 100:.0f}%"} for _, r in ex.iterrows()]
    return Table("Exposed communication", pd.DataFrame(rows),
                 "Exposed = median step time - median compute-only step time (same workload, "
                 "per-rank batch and knobs; compute-only run by as many concurrent processes "
                 "as the backend has ranks where measured). Negative values are noise.")


def convergence_table(cv: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "workload": r["workload"], "backend": r["label"],
             "world size": r["world_size"], "steps": r["steps"],
             "final loss": f"{r['losses'][-1]:.4g}",
             "reference final loss": f"{r['reference_losses'][-1]:.4g}",
             "max rel dev": f"{r['max_rel_dev']:.3g}", "tolerance": f"{r['tolerance']:.3g}",
             "within": "yes" if r["within"] else "NO",
             "weights": _weights_cell(r)} for _, r in cv.iterrows()]
    return Table("Convergence vs the single-process reference", pd.DataFrame(rows),
                 "Weights: after training, whether every rank held the same parameters "
                 "(bitwise) and their relative deviation from the reference's (L2, all "
                 "parameters) against its tolerance; empty where not recorded.")


def _weights_cell(r: pd.Series) -> str:
    """The weight check of a convergence row (ranks equal; deviation vs tolerance)."""
    equal, tol = r.get("weights_equal"), r.get("weight_tolerance")
    if equal is None or tol is None or (isinstance(equal, float) and np.isnan(equal)):
        return ""
    dev = r.get("weight_rel_dev")
    ranks = "ranks equal" if equal else "RANKS DIFFER"
    if dev is None or not np.isfinite(dev):
        return f"{ranks}; vs single: not finite (tolerance {tol:.0e})"
    return f"{ranks}; vs single {dev:.2g} {'<=' if dev <= tol else '>'} {tol:.0e}"


def tta_table(tta: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "workload": r["workload"], "backend": r["label"],
             "world size": r["world_size"], "target": f"{r['target']:.3g}",
             "reached": "yes" if r["reached"] else "no",
             "seconds": "" if r["seconds"] is None else f"{float(r['seconds']):.2f}",
             "steps": "" if r["steps"] is None else str(r["steps"])}
            for _, r in tta.iterrows()]
    return Table("Time to accuracy", pd.DataFrame(rows))


def _pick_sizes(sizes, k: int = 6) -> list[int]:
    sizes = sorted(set(sizes))
    if len(sizes) <= k:
        return sizes
    return [sizes[i] for i in sorted(set(np.linspace(0, len(sizes) - 1, k).round().astype(int)))]


def collectives_table(coll: pd.DataFrame, memcpy: pd.DataFrame) -> Table:
    picked = _pick_sizes(coll["bytes"])
    rows = []
    groups = sorted(coll.groupby(["run", "op", "label", "world_size", "dtype"]),
                    key=lambda kg: (kg[0][0], OP_ORDER.get(kg[0][1], 9), kg[0][1:]))
    for (run, op, lab, ws, dt), g in groups:
        row = {"run": run, "op": op, "backend": lab, "world size": ws, "dtype": dt}
        for b in picked:
            hit = g[g["bytes"] == b]
            row[human_bytes(b)] = "" if hit.empty else (
                f"{hit['busbw_gbps'].iloc[0]:.3g}" + ("" if hit["correct"].all() else " ✗"))
        row["all correct"] = "yes" if g["correct"].all() else "NO"
        rows.append(row)
    note = "busbw in GB/s per message size (per rank); ✗ = result was wrong at that size."
    if not memcpy.empty:
        note += " memcpy peak (the limit): " + ", ".join(
            f"{g['bandwidth_gbps'].max():.3g} GB/s ({dev}, {run})"
            for (run, dev), g in memcpy.groupby(["run", "device"]))
    return Table("Collectives: bus bandwidth", pd.DataFrame(rows), note)


def _pending(cell: pd.Series) -> str:
    """'not run', or how many of its repetitions ran (`run --repeat N`, interrupted)."""
    done = int(cell["reps_done"])
    return f"{done} of {int(cell['reps'])} repetitions ran" if done else "not run"


def failed_table(cells: pd.DataFrame) -> Table:
    bad = cells[cells["status"] != "passed"] if not cells.empty else cells
    rows = [{"run": r["run"], "cell": r["cell_id"], "status": r["status"],
             "error": r["error"] or (_pending(r) if r["status"] == "pending"
                                     else "(no message)"),
             "log": r["log"]} for _, r in bad.iterrows()]
    return Table("Cells that did not pass", pd.DataFrame(rows),
                 "Not used in any comparison. 'pending' cells have not run every repetition "
                 "(incomplete run: resume it, and a cell's repetitions are used once all have "
                 "run); "
                 "'interrupted' cells were stopped by Ctrl-C or a signal (resume the run); "
                 "'unreadable' cells passed, but a results file of theirs cannot be used "
                 "(the error names the file and the field).")


def run_meta_table(data: Data) -> Table:
    """Each run; its command, versions and hardware (long) fold in the HTML. No folder:
    the run's name is its folder's, and files are named relative to it elsewhere."""
    rows = []
    for run in data.runs:
        m = run.manifest
        rows.append({"run": run.name, "preset": m.preset or "",
                     "git": str(m.git_commit or "")[:12],
                     "started": m.started or "", "finished": m.finished or "",
                     "complete": "yes" if m.complete else "NO",
                     "command": " ".join(str(rel(a, run.path)) for a in m.command or []),
                     "versions": "; ".join(f"{k}={plain(v)}" for k, v in
                                           (m.versions or {}).items() if v),
                     "hardware": kv(run.hardware)})
    return Table("Runs", pd.DataFrame(rows))


def knob_table(data: Data) -> Table:
    """Each knob set once: its name and every knob (None = the library's default)."""
    seen: dict[tuple, str] = {}
    for run in data.runs:
        for c in run.cells:
            for b in c.benchmarks:
                knobs = getattr(b.record, "knobs", None)
                if knobs is not None:
                    seen.setdefault((run.name, getattr(b.record, "knob_set", None)
                                     or "default", kv(knobs, keep_none=True)), "")
    rows = [{"run": r, "knob set": k, "knobs": v} for r, k, v in sorted(seen)]
    return Table("Knob sets", pd.DataFrame(rows), "None = the library's own default.")


def cell_meta_table(data: Data) -> Table:
    meta, where = {}, {}
    for run in data.runs:
        where[run.name] = run.path
        for c in run.cells:
            first = c.benchmarks[0].record if c.benchmarks else None
            sets = sorted({getattr(x.record, "knob_set", None) or "default"
                           for x in c.benchmarks if getattr(x.record, "knobs", None) is not None})
            meta[(run.name, c.id)] = (kv_rel(getattr(first, "backend_meta", None), run.path),
                                      ", ".join(sets))
    rows = []
    for _, r in data.cells.iterrows():
        bm, knobs = meta.get((r["run"], r["cell_id"]), ("", ""))
        rows.append({"run": r["run"], "cell": r["cell_id"], "launcher": r["launcher"],
                     "world size": r["world_size"], "status": r["status"],
                     "seconds": "" if r["seconds"] is None else f"{float(r['seconds']):.1f}",
                     "knob sets": knobs, "backend meta": bm,
                     "env": kv_rel(r["env"], where.get(r["run"]))})
    return Table("Cells: launcher, knob sets, backend metadata, environment",
                 pd.DataFrame(rows))


if __name__ == "__main__":
    from hvd_vs_ddp.reports.compare import add_scaling
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    d = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    for t in (throughput_table(add_scaling(d.throughput)), failed_table(d.cells)):
        print(t.title, "\n", t.df.to_string(), "\n")

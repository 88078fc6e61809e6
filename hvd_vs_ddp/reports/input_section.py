"""The report's "Input pipeline" section: what decoding on the host does to each library.

For every throughput cell fed by the host pipeline (`input_mode` "jpeg": JPEG files
decoded and augmented by DataLoader workers; hvd_vs_ddp/workloads/jpeg_set.py), its
memory twin is the cell of the same run, series, workload, parameters, per-rank batch,
knobs and world size fed from tensors in memory. Per library and world size:

- throughput with the host pipeline / in memory, its 95% two-level interval and verdict
  (hvd_vs_ddp.run_model.stats and hvd_vs_ddp.run_model.verdicts, unchanged; worded as a
  run-against-run comparison), the median time a step waited for its batch and its share
  of the step;
- what competes for the host's cores (hvd_vs_ddp/harness/host_cpu.py, the medians over
  repetitions of the means over ranks): each rank's main (training) thread, its other
  threads (the library's own: DDP's Gloo threads `gloo_tcp_loop`, `pt_gloo_runloop`;
  Horovod's background thread, which has no name, with its Gloo or MPI threads; torch's
  intra-op threads), and its loader workers, against the cores each rank has (the host's
  cores / ranks on it);
- the same ratio without any library: the compute-only cells (the per-rank step with no
  communication, as many processes at once as ranks) with and without the host pipeline,
  so the part of a library's slowdown that decoding causes alone is in view;
- per Horovod/DDP pair the verdict with tensors in memory beside the verdict with the
  host pipeline (the comparison's own rows, hvd_vs_ddp.run_model.pairs.hvd_vs_ddp), and how
  far the host pipeline moved the ratio;
- a figure of the CPU each side asked for, stacked by who asked (`input_cpu`).

    from hvd_vs_ddp.reports.input_section import input_section
    section = input_section(data, cmp, figs, margin)    # a render.Section, or None
    python -m hvd_vs_ddp.reports.input_section RUN_DIR   # prints the tables and sentences
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from hvd_vs_ddp.reports.figures import Figures
from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.tables import Table, r3, sps
from hvd_vs_ddp.reports.theme import color, style
from hvd_vs_ddp.run_model import stats, verdicts
from hvd_vs_ddp.run_model.frames import POOL_KEY, Data, rep_samples

TITLE = "Input pipeline"
MEMORY, JPEG, DEVICE = "memory", "jpeg", "device"
MAIN = "main thread"
# what makes a memory cell the twin of a host-pipeline cell
TWIN_KEY = ["run", "workload", "workload_params", "per_rank_batch", "knob_set", "knobs",
            "world_size", "series"]


def _reps_of(data: Data, r: pd.Series) -> pd.DataFrame:
    mine = data.throughput_reps
    for k in POOL_KEY:
        mine = mine[mine[k] == r[k]]
    return mine


def _median(values: list[float | None] | list[float]) -> float:
    vals = [float(v) for v in values if v is not None and not pd.isna(v)]
    return float(np.median(vals)) if vals else np.nan


def foreign_load(data: Data, r: pd.Series) -> float:
    """Median over a cell's repetitions of the cores other processes used on the host
    meanwhile (the runner's foreign load; hvd_vs_ddp/run_model/disturbed.py); NaN if
    not recorded."""
    for run in data.runs:
        if run.name != r["run"]:
            continue
        for cell in run.cells:
            if cell.id == r["cell_id"]:
                return _median([rep.foreign_load for rep in cell.entry.repeats or []])
    return np.nan


def usage(data: Data, r: pd.Series) -> dict[str, Any]:
    """The host CPU and the waits of a pooled throughput row, from its repetitions: cores
    per rank of the process, its main thread, its other threads by group, the loader
    workers; the cores each rank had; the median wait for a batch and its share of the
    step (per timed step, pooled over repetitions). NaN where the run did not record it."""
    reps = _reps_of(data, r)
    groups: dict[str, list[float]] = {}
    have, waits, shares = None, [], []
    for _, rep in reps.iterrows():
        pipe = rep.get("input_pipeline")
        if isinstance(pipe, dict) and pipe.get("ranks"):
            ranks = pipe["ranks"]
            names = {g for rk in ranks for g in rk.get("threads", {})}
            for g in names:
                groups.setdefault(g, []).append(
                    float(np.mean([rk.get("threads", {}).get(g, 0.0) for rk in ranks])))
            if pipe.get("cores"):
                have = float(pipe["cores"]) / int(rep["world_size"])  # one host: see notes
        wait = rep.get("data_wait")
        if isinstance(wait, np.ndarray) and wait.size == len(rep["steps"]):
            waits.append(wait)
            shares.append(wait / np.maximum(rep["steps"], 1e-12))
    host = _median(list(reps.get("host_cpu_cores", [])))
    main = _median(groups.get(MAIN, []))
    others = {g: _median(v) for g, v in groups.items() if g != MAIN}
    loader = _median(list(reps.get("loader_cpu_cores", [])))
    workers = reps.get("loader_workers")
    return {"host_cores": host, "main_cores": main,
            "other_cores": host - main if not pd.isna(host) and not pd.isna(main) else np.nan,
            "threads": {g: v for g, v in sorted(others.items()) if v > 0.0005},
            "loader_cores": loader,
            "workers": int(workers.iloc[0]) if workers is not None and len(workers)
            and not pd.isna(workers.iloc[0]) else None,
            "cores_per_rank": have if have is not None else np.nan,
            "others_cores": foreign_load(data, r),
            "wait_s": float(np.median(np.concatenate(waits))) if waits else np.nan,
            "wait_share": float(np.median(np.concatenate(shares))) if shares else np.nan}


def _in_memory(df: pd.DataFrame) -> str:
    """The mode the host pipeline is set against: "memory" (tensors through a loader)
    where the run has it, else "device" (ready batches: hvd_vs_ddp/workloads/feed.py)."""
    return MEMORY if (df["input_mode"] == MEMORY).any() else DEVICE


def per_library(data: Data, margin: float) -> pd.DataFrame:
    """One row per host-pipeline throughput cell: against its memory twin (when there is
    one) and what competed for the cores on both."""
    tp = data.throughput
    if tp.empty or "input_mode" not in tp or not (tp["input_mode"] == JPEG).any():
        return pd.DataFrame()
    memory = tp[tp["input_mode"] == _in_memory(tp)]
    rows = []
    for _, j in tp[tp["input_mode"] == JPEG].iterrows():
        twin = memory
        for k in TWIN_KEY:
            twin = twin[twin[k] == j[k]]
        m = twin.iloc[0] if not twin.empty else None
        row: dict[str, Any] = {
            "run": j["run"], "case": m["case"] if m is not None else j["case"],
            "world_size": int(j["world_size"]), "series": j["series"], "label": j["label"],
            "library": j["library"], "jpeg_sps": j["sps_median"],
            "memory_sps": m["sps_median"] if m is not None else np.nan,
            "jpeg": usage(data, j), "memory": usage(data, m) if m is not None else None}
        if m is not None:
            ci = stats.ratio_ci(rep_samples(j), rep_samples(m))
            v = verdicts.judge(ci, margin, 2, f"{j['series']} host pipeline",
                               f"{j['series']} in memory")  # run against run: never "overhead"
            row.update(ratio=ci.ratio, lo=ci.lo, hi=ci.hi, reps=ci.reps, verdict=v.verdict,
                       judged=v)
        rows.append(row)
    return pd.DataFrame(rows)


def without_library(data: Data, margin: float) -> pd.DataFrame:
    """The compute-only cells (no communication) with the host pipeline against in
    memory: throughput ratio (per-rank step time in memory / with the pipeline), its
    interval and verdict."""
    co = data.compute_only
    if co.empty or "input_mode" not in co or not (co["input_mode"] == JPEG).any():
        return pd.DataFrame()
    rows = []
    for key, g in co.groupby(["run", "workload", "per_rank_batch", "knobs", "ranks"],
                             sort=True):
        jp, mem = g[g["input_mode"] == JPEG], g[g["input_mode"] == _in_memory(co)]
        if jp.empty or mem.empty:
            continue
        ci = stats.ratio_ci([1.0 / np.asarray(s) for s in jp["steps"]],
                            [1.0 / np.asarray(s) for s in mem["steps"]])
        v = verdicts.judge(ci, margin, 2, "compute only, host pipeline",
                           "compute only, in memory")
        rows.append({"run": key[0], "workload": key[1], "ranks": int(key[4]),
                     "memory_step_s": stats.median(np.concatenate(list(mem["steps"]))),
                     "jpeg_step_s": stats.median(np.concatenate(list(jp["steps"]))),
                     "ratio": ci.ratio, "lo": ci.lo, "hi": ci.hi, "judged": v})
    return pd.DataFrame(rows)


def _without_table(w: pd.DataFrame) -> Table:
    rows = [{"case": r["workload"], "processes": r["ranks"],
             "step ms in memory": f"{r['memory_step_s'] * 1e3:.1f}",
             "step ms host pipeline": f"{r['jpeg_step_s'] * 1e3:.1f}",
             "host / memory": r3(r["ratio"]), "verdict": r["judged"].text()}
            for _, r in w.iterrows()]
    return Table("Without a library: the compute-only step with and without the host "
                 "pipeline", pd.DataFrame(rows),
                 "The per-rank step with no communication, run by as many processes at "
                 "once as the libraries have ranks: what decoding on the host costs before "
                 "any library's threads join in.")


def pair_verdicts(cmp: pd.DataFrame) -> pd.DataFrame:
    """Per Horovod/DDP pair and world size: the verdict in memory beside the verdict with
    the host pipeline, and the ratio's change (host pipeline ratio / memory ratio)."""
    if cmp.empty or "input_mode" not in cmp or not (cmp["input_mode"] == JPEG).any():
        return pd.DataFrame()
    key = ["run", "world_size", "horovod", "ddp", "base_case"]
    c = cmp.assign(base_case=[case.replace(f" [{mode} input]", "")
                              for case, mode in zip(cmp["case"], cmp["input_mode"])])
    jp, mem = c[c["input_mode"] == JPEG], c[c["input_mode"] == _in_memory(c)]
    m = jp.merge(mem, on=key, how="left", suffixes=("", "_mem"))
    rows = []
    for _, r in m.iterrows():
        has_mem = not pd.isna(r.get("ratio_mem"))
        rows.append({"run": r["run"], "case": r["base_case"], "world_size": r["world_size"],
                     "horovod": r["horovod"], "ddp": r["ddp"],
                     "memory": r["judged_mem"] if has_mem else None, "jpeg": r["judged"],
                     "shift": r["ratio"] / r["ratio_mem"] if has_mem else np.nan})
    return pd.DataFrame(rows)


def _cores(v: float) -> str:
    return "" if pd.isna(v) else f"{v:.2f}"


def _pct(v: float) -> str:
    return "" if pd.isna(v) else f"{v * 100:.0f}%"


def _threads(u: dict[str, Any]) -> str:
    return ", ".join(f"{g} {v:.2f}" for g, v in u["threads"].items()) or "none"


def _library_table(p: pd.DataFrame) -> Table:
    rows = []
    for _, r in p.iterrows():
        j, m = r["jpeg"], r["memory"] or {}
        rows.append({
            "case": r["case"], "ranks": r["world_size"], "backend": r["series"],
            "samples/s (memory, host)": f"{sps(r['memory_sps'])}, {sps(r['jpeg_sps'])}",
            "host / memory [95%]": r3(r.get("ratio", np.nan)) + (
                f" [{r['lo']:.3f}–{r['hi']:.3f}]" if not pd.isna(r.get("lo", np.nan)) else ""),
            "verdict": r["judged"].text() if isinstance(r.get("judged"), verdicts.Verdict)
            else "no memory twin",
            "wait/step ms (memory, host)": f"{_ms(m.get('wait_s'))}, {_ms(j['wait_s'])}",
            "wait share (host)": _pct(j["wait_share"]),
            "main thread cores (memory, host)": f"{_cores(m.get('main_cores', np.nan))}, "
                                                f"{_cores(j['main_cores'])}",
            "other threads (host)": _threads(j),
            "loader cores (workers)": f"{_cores(j['loader_cores'])} ({j['workers']})",
            "asked / has per rank": f"{_cores(_demand(j))} / {_cores(j['cores_per_rank'])}",
            "other work on the host (cores)": _cores(j["others_cores"])})
    return Table("Each library with the host pipeline against tensors in memory",
                 pd.DataFrame(rows),
                 "CPU in cores per rank over the timed rounds (medians over repetitions of "
                 "the mean over ranks): the main (training) thread, the process's other "
                 "threads by name, its DataLoader workers; 'asked' is their sum, 'has' the "
                 "host's cores over the ranks on it; other work: cores that processes "
                 "outside the run used meanwhile (the runner's foreign load), which the "
                 "ranks did not have. Waits: the median time a step waited for its batch.")


def _ms(v: Any) -> str:
    return "" if v is None or pd.isna(v) else f"{v * 1e3:.1f}"


def _demand(u: dict[str, Any]) -> float:
    host, loader = u["host_cores"], u["loader_cores"]
    return np.nan if pd.isna(host) else host + (0.0 if pd.isna(loader) else loader)


def _pair_table(pv: pd.DataFrame) -> Table:
    rows = [{"case": r["case"], "ranks": r["world_size"], "pair": f"{r['horovod']} / {r['ddp']}",
             "tensors in memory": r["memory"].text() if r["memory"] is not None else "not run",
             "host pipeline": r["jpeg"].text(),
             "ratio moved by": "" if pd.isna(r["shift"]) else f"x{r['shift']:.3f}"}
            for _, r in pv.iterrows()]
    return Table("Horovod vs DDP with and without the host pipeline", pd.DataFrame(rows),
                 "Horovod / DDP samples/s (> 1: Horovod faster); 'ratio moved by' is the "
                 "host-pipeline ratio over the in-memory ratio.")


def sentences(p: pd.DataFrame, pv: pd.DataFrame) -> list[str]:
    """Why, in words: per library what decoding cost and who competed; per pair the shift."""
    out = []
    for _, r in p.iterrows():
        j, m = r["jpeg"], r["memory"]
        s = f"{r['series']} at {r['world_size']} ranks ({r['case']}): "
        if isinstance(r.get("judged"), verdicts.Verdict):
            s += (f"the host pipeline ran at {r['ratio']:.2f} of its in-memory throughput "
                  f"[{r['lo']:.2f}-{r['hi']:.2f}]; ")
        named = "" if list(j["threads"]) in ([], ["other threads"]) else f": {_threads(j)}"
        s += (f"each rank's process used {_cores(j['host_cores'])} cores (main thread "
              f"{_cores(j['main_cores'])}, other threads {_cores(j['other_cores'])}"
              f"{named}) and its {j['workers']} loader workers "
              f"{_cores(j['loader_cores'])}, {_cores(_demand(j))} cores asked of "
              f"{_cores(j['cores_per_rank'])} per rank")
        if not pd.isna(j["others_cores"]):
            s += f" (other work used {_cores(j['others_cores'])} of the host's cores meanwhile)"
        if m is not None and not pd.isna(m["main_cores"]) and not pd.isna(j["main_cores"]):
            s += (f"; the main thread got {_cores(j['main_cores'])} cores against "
                  f"{_cores(m['main_cores'])} in memory")
        if not pd.isna(j["wait_share"]):
            s += (f"; steps waited {_ms(j['wait_s'])} ms for their batch "
                  f"({_pct(j['wait_share'])} of a step)")
        out.append(s + ".")
    for _, r in pv.iterrows():
        mem = r["memory"]
        s = (f"{r['horovod']} / {r['ddp']} at {r['world_size']} ranks ({r['case']}): "
             f"with the host pipeline {r['jpeg'].text()}")
        if mem is not None:
            said = f"{mem.faster} faster" if mem.faster else mem.verdict
            s += (f"; in memory: {said} (ratio {mem.ci.ratio:.3f}); the host pipeline "
                  f"moved the ratio by x{r['shift']:.3f}")
        out.append(s + ".")
    return out


def cpu_figure(p: pd.DataFrame, figs: Figures) -> None:
    """Stacked bars per backend and input: main thread, other threads, loader workers,
    with each rank's cores as a dashed line; one panel per case and world size."""
    panels = list(p.groupby(["run", "case", "world_size"], sort=True))
    if not panels:
        return
    with style():
        fig = Figure(figsize=(4.8 * len(panels) + 1.5, 3.6), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False).ravel()
        for ax, ((_run, case, ws), g) in zip(axes, panels):
            bars = [(f"{r['series']}\n{mode}", r["label"], u)
                    for _, r in g.iterrows()
                    for mode, u in (("memory", r["memory"]), ("host", r["jpeg"]))
                    if u is not None]
            x = np.arange(len(bars))
            parts = [("main thread", "main_cores", 1.0), ("other threads", "other_cores", 0.55),
                     ("loader workers", "loader_cores", 0.25)]
            bottom = np.zeros(len(bars))
            for name, key, alpha in parts:
                vals = np.nan_to_num([u[key] for _, _, u in bars])
                ax.bar(x, vals, bottom=bottom, color=[color(lab) for _, lab, _ in bars],
                       alpha=alpha, edgecolor="black", linewidth=0.4, label=name)
                bottom += vals
            has = [u["cores_per_rank"] for _, _, u in bars if not pd.isna(u["cores_per_rank"])]
            if has:
                ax.axhline(has[0], color="black", ls=(0, (4, 3)), lw=1.2,
                           label="cores per rank")
                others = [u["others_cores"] for _, _, u in bars
                          if not pd.isna(u["others_cores"])]
                if others:  # what other work on the host left the ranks
                    ax.axhline(max(has[0] - float(np.median(others)) / ws, 0.0),
                               color="grey", ls=":", lw=1.4,
                               label="left per rank by other work")
            ax.set_xticks(x, [b[0] for b in bars], fontsize=8)
            ax.set_ylabel("CPU cores per rank")
            ax.set_title(f"{case}, {ws} ranks", fontsize=10)
        axes[0].legend(fontsize=8, loc="upper left")
        figs.add("input_cpu", "Who uses the host's cores: training thread, library threads, "
                 "loader workers", fig, "Per rank, over the timed rounds; shades from dark "
                 "to light: the main thread, the process's other threads (the library's "
                 "own, intra-op), the DataLoader workers; dashed: the host's cores per "
                 "rank; dotted: what other work on the host (the runner's foreign load) "
                 "left per rank.")


def input_section(data: Data, cmp: pd.DataFrame, figs: Figures,
                  margin: float) -> Section | None:
    """The section, or None when no cell used the host pipeline."""
    p = per_library(data, margin)
    if p.empty:
        return None
    pv = pair_verdicts(cmp)
    blocks: list[Any] = [_library_table(p)]
    w = without_library(data, margin)
    if not w.empty:
        blocks.append(_without_table(w))
    if not pv.empty:
        blocks.append(_pair_table(pv))
    cpu_figure(p, figs)
    fig = figs.get("input_cpu")
    blocks += [fig] if fig is not None else []
    blocks.append(Notes(sentences(p, pv) + [
        "What competes: decoding and augmenting JPEGs runs in the DataLoader's worker "
        "processes; the rank's own process runs the training (main) thread and the "
        "library's threads: DDP's reducer runs on the autograd (main) thread and hands "
        "buckets to Gloo's threads (gloo_tcp_loop, pt_gloo_runloop); Horovod's background "
        "thread (unnamed: 'other threads') negotiates and runs every allreduce, polling "
        "each cycle. When what is asked exceeds the cores a rank has, the kernel shares "
        "them out and the thread that loses time delays the step.",
        "Cores per rank assume every rank on one host (as `run` starts them without "
        "--hosts). The synthetic JPEGs are made once per machine in the cache folder "
        "(hvd_vs_ddp/workloads/jpeg_set.py); --jpeg-size sets their size, and so the "
        "decoding work per image."]))
    return Section(TITLE, blocks)


if __name__ == "__main__":
    from hvd_vs_ddp.reports.compare import add_scaling
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

    d = build_frames([load_judged_run(x) for x in sys.argv[1:]])
    c = hvd_vs_ddp(add_scaling(d.throughput))
    sec = input_section(d, c, Figures(), verdicts.DEFAULT_MARGIN)
    with pd.option_context("display.width", 250, "display.max_columns", 30,
                           "display.max_colwidth", 80):
        for b in (sec.blocks if sec else ["no cell used the host pipeline (--input jpeg)"]):
            if isinstance(b, Table):
                print(b.title, "\n", b.df.to_string())
            elif isinstance(b, Notes):
                print("\n".join(b.items))

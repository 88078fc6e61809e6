"""The report's "Compiled" section: does each library keep its speed and overlap compiled?

For every throughput cell whose knob set compiles (knobs "compile", docs/compile.md),
its eager twin is the cell of the same run, library (series), workload, per-rank batch
and world size whose knobs differ only in the compile mode. Per such pair:

- throughput compiled / eager with its 95% two-level interval and verdict
  (hvd_vs_ddp.run_model.stats and hvd_vs_ddp.run_model.verdicts, unchanged; worded as a
  run-against-run comparison, so a 1-rank pair is not called "framework overhead"), compile seconds
  (median over repetitions of the warm-up steps that compiled), graphs, graph breaks,
  the subgraphs of Dynamo's DDP optimizer, recompiles during the timed rounds
  (flagged), and whether compiled and eager trained the same losses (LOSS_TOLERANCE);
- overlap before and after: communication, the part hidden under backward and the
  exposed part from the library's own figures (DDP's runtime statistics, Horovod's
  timeline), the subtraction (step - compute-only step) and the profiler's ruler, all
  from hvd_vs_ddp.reports.sections.why (steps, profiler);
- compiled Horovod against compiled DDP beside the eager verdict, and one sentence for
  the answer box where compiling changes which library is faster.

    from hvd_vs_ddp.reports.compiled_section import compiled_section, answer_sentences
    section = compiled_section(data, cmp, margin)     # a render.Section, or None
    python -m hvd_vs_ddp.reports.compiled_section RUN_DIR   # prints the tables
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import DDP
from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.tables import Table, ms, r3, sps
from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.compile_pairs import LOSS_TOLERANCE, pairs
from hvd_vs_ddp.run_model.frames import Data

TITLE = "Compiled"


def _why_rows(data: Data) -> pd.DataFrame:
    """Where-the-step-goes rows (own figures, subtraction) with the profiler's ruler."""
    from hvd_vs_ddp.reports.sections.why.profiler import KEYS, profiler_frame
    from hvd_vs_ddp.reports.sections.why.steps import where_step_goes

    steps = where_step_goes(data).steps
    prof, _ = profiler_frame(data)
    if steps.empty:
        return steps
    if not prof.empty:
        steps = steps.merge(prof, on=list(KEYS), how="left")
    return steps


def _pick(w: pd.DataFrame, run: str, case: str, series: str, ws: int) -> pd.Series | None:
    if w.empty:
        return None
    m = w[(w["run"] == run) & (w["case"] == case) & (w["series"] == series)
          & (w["world_size"] == ws)]
    return None if m.empty else m.iloc[0]


def _get(r: pd.Series | None, key: str) -> float:
    if r is None:
        return np.nan
    v = r.get(key)
    return float(v) if v is not None and not pd.isna(v) else np.nan


def overlap(p: pd.DataFrame, w: pd.DataFrame) -> pd.DataFrame:
    """Per compiled pair (above 1 rank): communication, hidden and exposed, before/after."""
    rows = []
    for _, r in p[p["world_size"] > 1].iterrows():
        e = _pick(w, r["run"], r["case"], r["series"], r["world_size"])
        c = _pick(w, r["run"], r["compiled_case"], r["series"], r["world_size"])
        row = {"run": r["run"], "case": r["case"], "world_size": r["world_size"],
               "series": r["series"], "mode": r["mode"],
               "own_source": next((str(x["source"]) for x in (c, e) if x is not None
                                   and isinstance(x.get("source"), str)), "")}
        for side, x in (("eager", e), ("compiled", c)):
            for key in ("own_comm_s", "own_hidden_s", "own_exposed_s", "sub_exposed_s",
                        "prof_comm_s", "prof_overlap_s", "prof_exposed_comm_s"):
                row[f"{side}_{key}"] = _get(x, key)
        row["survived"] = survived(row)
        rows.append(row)
    return pd.DataFrame(rows)


def _hidden_share(row: dict[str, Any], side: str) -> float:
    comm, hidden = row.get(f"{side}_own_comm_s"), row.get(f"{side}_own_hidden_s")
    if comm is None or hidden is None or not np.isfinite(comm) or not np.isfinite(hidden) \
            or comm <= 0:
        return np.nan
    return min(1.0, max(0.0, hidden / comm))


def survived(row: dict[str, Any]) -> str:
    """One clause: the share of communication hidden under backward, eager -> compiled,
    from the library's own figures."""
    before, after = _hidden_share(row, "eager"), _hidden_share(row, "compiled")
    if not np.isfinite(after):
        return ("not measured compiled (no own figures: DDP's python reducer records no "
                "runtime statistics; see the profiler columns)" if np.isfinite(before)
                else "not measured")
    if not np.isfinite(before):
        return f"{after:.0%} hidden compiled (eager not measured)"
    verdict = ("kept" if after >= 0.75 * before else "lost" if after < 0.25 * before
               else "reduced")
    return f"{verdict}: {before:.0%} of communication hidden eager, {after:.0%} compiled"


def head_to_head(p: pd.DataFrame, cmp: pd.DataFrame) -> pd.DataFrame:
    """Compiled Horovod vs compiled DDP beside the same pair eager (cmp rows)."""
    if p.empty or cmp.empty:
        return pd.DataFrame()
    rows = []
    cases = p[["run", "case", "compiled_case", "mode"]].drop_duplicates()
    for _, k in cases.iterrows():
        comp = cmp[(cmp["run"] == k["run"]) & (cmp["case"] == k["compiled_case"])]
        for _, c in comp.iterrows():
            e = cmp[(cmp["run"] == k["run"]) & (cmp["case"] == k["case"])
                    & (cmp["world_size"] == c["world_size"]) & (cmp["horovod"] == c["horovod"])
                    & (cmp["ddp"] == c["ddp"])]
            ej = e["judged"].iloc[0] if not e.empty else None
            cj = c["judged"]
            rows.append({"run": k["run"], "case": k["case"], "mode": k["mode"],
                         "world_size": int(c["world_size"]), "horovod": c["horovod"],
                         "ddp": c["ddp"], "eager": ej, "compiled": cj,
                         "changed": ej is not None and ej.faster != cj.faster})
    return pd.DataFrame(rows)


def answer_sentences(data: Data, cmp: pd.DataFrame, margin: float) -> list[str]:
    """One sentence per case and world size where compiling changes which library is
    faster (the verdicts' winners differ, or one side wins only eager or only compiled)."""
    return sentences(head_to_head(pairs(data, margin), cmp), multi=len(data.runs) > 1)


def sentences(hh: pd.DataFrame, multi: bool = False) -> list[str]:
    """The answer's sentences from head_to_head's rows whose winner changed: "flips which
    library is faster" when both verdicts name a winner, else "changes the verdict"."""
    out = []
    for _, r in hh[hh["changed"]].iterrows() if not hh.empty else ():
        pre = f"[{r['run']}] " if multi else ""
        ranks = f"{r['world_size']} rank" + ("" if r["world_size"] == 1 else "s")
        eager, compiled = r["eager"], r["compiled"]
        flips = eager is not None and eager.faster and compiled.faster
        what = "flips which library is faster" if flips else "changes the verdict"
        out.append(f"{pre}Compiling ({r['mode']}) {what} for {r['case']} at {ranks}: "
                   f"eager, {eager.text() if eager is not None else 'not measured'}; "
                   f"compiled, {compiled.text()}.")
    return out


def _num(v: Any, fmt: str = "{:g}") -> str:
    return "" if v is None or (isinstance(v, float) and not np.isfinite(v)) else fmt.format(v)


def _pair_table(p: pd.DataFrame) -> Table:
    rows = []
    for _, r in p.iterrows():
        flags = []
        if r["recompiles_timed"] and np.isfinite(r["recompiles_timed"]) \
                and r["recompiles_timed"] > 0:
            flags.append(f"RECOMPILED {int(r['recompiles_timed'])}x in the timed rounds")
        if r["still_compiling"]:
            flags.append("still compiling at the end of warm-up")
        same = ("" if r["same_losses"] is None else
                f"{'yes' if r['same_losses'] else 'NO'} ({r['loss_dev']:.2g})")
        rows.append({"run": r["run"], "case": r["case"], "world size": r["world_size"],
                     "library": r["series"], "compile": r["mode"],
                     "eager samples/s": sps(r["eager_sps"]),
                     "compiled samples/s": sps(r["compiled_sps"]),
                     "compiled / eager [95%]": f"{r3(r['ratio'])} [{r3(r['lo'])}-"
                                               f"{r3(r['hi'])}]",
                     "verdict": r["judged"].text(),
                     "compile cold (s)": _num(r["compile_cold_s"], "{:.1f}"),
                     "compile warm (s)": _num(r["compile_warm_s"], "{:.1f}"),
                     "graphs": _num(r["graphs"], "{:.0f}"),
                     "graph breaks": _num(r["graph_breaks"], "{:.0f}"),
                     "DDP optimizer subgraphs": ", ".join(map(str, r["ddp_buckets"] or []))
                     if r["ddp_buckets"] else "",
                     "same losses as eager (max rel dev)": same,
                     "flags": "; ".join(flags)})
    df = pd.DataFrame(rows)
    if not df.empty and df["run"].nunique() == 1:
        df = df.drop(columns="run")
    return Table("Compiled vs eager, per library", df,
                 "Throughput compiled / eager (> 1: compiling made it faster), 95% two-level "
                 "interval and verdict as everywhere in this report. Compile (s): the wall "
                 "time of the warm-up steps that compiled (each the slowest rank's; median "
                 "over repetitions), into an empty inductor cache (cold: a first compile) "
                 "or into the cell's own cache an earlier repetition filled (warm). "
                 "Graphs and graph breaks: Dynamo's own counters for this model; DDP "
                 "optimizer subgraphs: how many pieces Dynamo's DDP optimizer cut each "
                 "graph into (one per DDP bucket). Same losses: every step's global loss "
                 f"within {LOSS_TOLERANCE:g} relative of the eager cell's (inductor reorders "
                 "floating-point work, so not bitwise).")


def _profiled(r: pd.Series, pair: Any) -> str:
    parts = [pair(r, k) for k in ("prof_comm_s", "prof_overlap_s", "prof_exposed_comm_s")]
    return " | ".join(parts) if any(parts) else ""  # empty: no profiled steps


def _overlap_table(o: pd.DataFrame) -> Table:
    def pair(r, key):
        a, b = r[f"eager_{key}"], r[f"compiled_{key}"]
        return "" if not (np.isfinite(a) or np.isfinite(b)) else f"{ms(a) or '-'} -> {ms(b) or '-'}"
    rows = [{"run": r["run"], "case": r["case"], "world size": r["world_size"],
             "library": r["series"], "compile": r["mode"], "own figures": r["own_source"],
             "comm (ms)": pair(r, "own_comm_s"),
             "hidden under backward (ms)": pair(r, "own_hidden_s"),
             "exposed (ms)": pair(r, "own_exposed_s"),
             "exposed, subtraction (ms)": pair(r, "sub_exposed_s"),
             "profiler: comm / overlap / exposed (ms)": _profiled(r, pair),
             "overlap": r["survived"]} for _, r in o.iterrows()]
    df = pd.DataFrame(rows)
    if not df.empty and df["run"].nunique() == 1:
        df = df.drop(columns="run")
    return Table("Overlap before and after compiling (eager -> compiled)", df,
                 "Each library's own figures (DDP's runtime statistics of the timed steps; "
                 "Horovod's timeline of its instrumented twin cell), the subtraction "
                 "(median step - median compute-only step of the same knobs) and the "
                 "profiler's ruler (run --profile, or the compile preset's profiled steps; "
                 "for Horovod the profiler sees only the training thread's wait, "
                 "horovod:synchronize). Overlap: the share of communication hidden under "
                 "backward, eager -> compiled, from the library's own figures.")


def _h2h_table(hh: pd.DataFrame) -> Table:
    rows = [{"run": r["run"], "case": r["case"], "world size": r["world_size"],
             "compile": r["mode"], "eager": r["eager"].text() if r["eager"] is not None
             else "not measured", "compiled": r["compiled"].text(),
             "winner changed": "YES" if r["changed"] else "no"} for _, r in hh.iterrows()]
    df = pd.DataFrame(rows)
    if not df.empty and df["run"].nunique() == 1:
        df = df.drop(columns="run")
    return Table("Compiled Horovod vs compiled DDP", df,
                 "Horovod / DDP samples/s on the compiled cells beside the same pair eager.")


def compiled_section(data: Data, cmp: pd.DataFrame, margin: float) -> Section | None:
    """The section, or None when the run compiled nothing."""
    p = pairs(data, margin)
    if p.empty:
        return None
    blocks: list[Any] = [_pair_table(p)]
    o = overlap(p, _why_rows(data))
    if not o.empty:
        blocks.append(_overlap_table(o))
    hh = head_to_head(p, cmp)
    if not hh.empty:
        blocks.append(_h2h_table(hh))
    notes = [f"Graph breaks in {r['series']} ({r['mode']}, {r['case']}): "
             + "; ".join(f"{reason} (x{n})" for reason, n in r["break_reasons"].items())
             for _, r in p.drop_duplicates(["series", "mode"]).iterrows() if r["break_reasons"]]
    notes += ["Cold compile seconds include inductor's C++ compiler on every kernel; its "
              "precompiled headers (a folder per machine, built at the first compile ever) "
              "are not cleared. The first workload compiled in a process also pays for "
              "loading the compiler; workloads run in the same order on both sides."]
    notes += [f"{r['series']} ({r['mode']}, {r['case']}): Dynamo's DDP mode "
              f"{r['optimize_ddp']}." for _, r in p.drop_duplicates(["series", "mode"]).iterrows()
              if r["optimize_ddp"] and r.get("library") == DDP]
    blocks.append(Notes(notes + ["docs/compile.md: what each mode does, how compile time "
                                 "and overlap are measured, and what is left out."]))
    return Section(TITLE, blocks)


if __name__ == "__main__":
    from hvd_vs_ddp.reports.compare import add_scaling
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

    d = build_frames([load_judged_run(x) for x in sys.argv[1:]])
    c = hvd_vs_ddp(add_scaling(d.throughput))
    sec = compiled_section(d, c, verdicts.DEFAULT_MARGIN)
    with pd.option_context("display.width", 250, "display.max_columns", 30,
                           "display.max_colwidth", 60):
        for b in (sec.blocks if sec else []):
            print(b.df.to_string() if isinstance(b, Table) else b)
    print("\n".join(answer_sentences(d, c, verdicts.DEFAULT_MARGIN)))

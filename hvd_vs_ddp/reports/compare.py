"""Derived numbers: Horovod/DDP throughput ratios with verdicts, run A vs run B,
scaling efficiency, exposed communication, and the headlines.

Horovod is compared with every ddp-* transport measured in the same run on the same
case (workload, its parameters, per-rank batch, knob set and knobs) and world size;
the ratio is horovod/ddp samples per second (> 1: Horovod faster), its interval from
the two-level bootstrap over repetitions and steps (hvd_vs_ddp.run_model.stats) and its verdict
with a practical margin (hvd_vs_ddp.run_model.verdicts). Before/after compares run B with run A
per matching cell (suite, backend, world size, workload, knobs and launcher); the
ratio is B/A. The one answer per case and world size is hvd_vs_ddp.reports.answer.

    from hvd_vs_ddp.reports.compare import before_after, headlines   # pairs: run_model/pairs.py
    python -m hvd_vs_ddp.reports.compare RUN_DIR...  # every pairwise verdict, the headlines
"""
from __future__ import annotations

import sys
from typing import Sequence

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import reference
from hvd_vs_ddp.reports.budget_text import budget_lines
from hvd_vs_ddp.run_model import stats, verdicts
from hvd_vs_ddp.run_model.disturbed import load_judged_run
from hvd_vs_ddp.run_model.frames import CASE_KEY, Data, build_frames, rep_samples
from hvd_vs_ddp.run_model.labels import order
from hvd_vs_ddp.run_model.load import UNREADABLE
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

MATCH_KEY = ["suite", "label", "launcher", "world_size", "workload", "workload_params",
             "per_rank_batch", "knob_set", "knobs", "input_mode"]


def _ranks(n: int) -> str:
    return f"{n} rank" + ("" if n == 1 else "s")


def before_after(tp: pd.DataFrame, run_a: str, run_b: str,
                 margin: float = verdicts.DEFAULT_MARGIN) -> tuple[pd.DataFrame, list[str]]:
    """Matching throughput cells of two runs, ratio B/A; plus notes on unmatched ones."""
    if tp.empty:
        return pd.DataFrame(), []
    a, b = tp[tp["run"] == run_a], tp[tp["run"] == run_b]
    m = a.merge(b, on=MATCH_KEY, suffixes=("_a", "_b"))
    rows = []
    for _, r in m.iterrows():
        ci = stats.ratio_ci(rep_samples(r, "_b"), rep_samples(r, "_a"))
        v = verdicts.judge(ci, margin, 2, "B", "A")  # run vs run: no overhead-only scope
        rows.append({"case": r["case_a"], "backend": r["series_a"], "world_size": r["world_size"],
                     "suite": r["suite"], "a_sps": r["sps_median_a"], "b_sps": r["sps_median_b"],
                     "ratio": ci.ratio, "lo": ci.lo, "hi": ci.hi, "reps": ci.reps,
                     "verdict": (f"{v.faster} faster" if v.faster else v.verdict)
                     + (" (indicative)" if v.strength == "indicative" else "")})
    out = pd.DataFrame(rows)
    if not out.empty:
        out = out.sort_values(["case", "world_size", "backend"], kind="stable")
    notes = []
    for name, side, other in ((run_a, a, b), (run_b, b, a)):
        keys = set(map(tuple, other[MATCH_KEY].astype(str).values))
        for _, r in side.iterrows():
            if tuple(map(str, r[MATCH_KEY].values)) not in keys:
                notes.append(f"only in {name}: {r['case']}, {r['series']} at "
                             f"{_ranks(r['world_size'])} ({r['suite']})")
    return out.reset_index(drop=True), notes


def add_scaling(tp: pd.DataFrame) -> pd.DataFrame:
    """Add baseline_sps (the np=1 value: `single` if measured, else the backend's own
    np=1 cell), baseline_from and efficiency = sps / (world_size * baseline)."""
    tp = tp.copy()
    if tp.empty:
        return tp
    base, src = [], []
    one = tp[tp["world_size"] == 1]
    for _, r in tp.iterrows():
        same = one
        for k in CASE_KEY:
            same = same[same[k] == r[k]]
        single = same[same["backend"] == reference()]
        own = same[same["series"] == r["series"]]
        pick = single if not single.empty else own
        base.append(pick["sps_median"].iloc[0] if not pick.empty else np.nan)
        src.append(("single np=1" if not single.empty else f"{r['series']} np=1")
                   if not pick.empty else "")
    tp["baseline_sps"], tp["baseline_from"] = base, src
    tp["efficiency"] = tp["sps_median"] / (tp["world_size"] * tp["baseline_sps"])
    return tp


def exposed_comm(data: Data) -> pd.DataFrame:
    """Median step time split into compute-only and exposed communication (the rest).

    The compute-only measurement must have run with as many concurrent processes as the
    backend has ranks (they share the machine); one measured with a single process is
    used only where no concurrent one exists, and the compute_ranks column says so."""
    tp, co = data.throughput, data.compute_only
    if tp.empty or co.empty:
        return pd.DataFrame()
    key = ["run", "workload", "per_rank_batch", "knobs", "input_mode"]
    co = co.groupby(key + ["ranks"], as_index=False)["step_median"].median().rename(
        columns={"step_median": "compute_s", "ranks": "compute_ranks"})
    dist = tp[tp["backend"] != reference()]
    same = dist.merge(co, left_on=key + ["world_size"], right_on=key + ["compute_ranks"])
    rest = dist[~dist.set_index(key + ["world_size"]).index.isin(
        same.set_index(key + ["world_size"]).index)]
    one = rest.merge(co[co["compute_ranks"] == 1], on=key)
    m = pd.concat([same, one], ignore_index=True)
    if m.empty:
        return pd.DataFrame()
    m["exposed_s"] = m["step_median"] - m["compute_s"]
    m["exposed_frac"] = m["exposed_s"] / m["step_median"]
    rank = {lab: i for i, lab in enumerate(order(m["label"]))}
    m = m.assign(_o=m["label"].map(rank)).sort_values(
        ["run", "case", "world_size", "_o", "series"])
    return m[["run", "case", "series", "label", "world_size", "step_median", "compute_s",
              "compute_ranks", "exposed_s", "exposed_frac"]].reset_index(drop=True)


def headlines(data: Data, cmp: pd.DataFrame, ba: pd.DataFrame | None = None,
              margin: float = verdicts.DEFAULT_MARGIN,
              answers: Sequence[str] = (), budget: Sequence[str] | None = None) -> list[str]:
    """The answer first (hvd_vs_ddp.reports.answer: one sentence per case and world size),
    then what run --budget took (`budget`: one line per run with a budget; by default the
    long form, reports/budget_text.py), convergence, before/after and failures."""
    out = list(answers) + list(budget_lines(data.runs) if budget is None else budget)
    if cmp.empty and not data.throughput.empty:
        out.append("No case has both a Horovod and a DDP throughput cell, so there is no "
                   "Horovod/DDP comparison; see the throughput table.")
    elif data.throughput.empty:
        out.append("No throughput results: nothing to compare.")
    cv = data.convergence
    if not cv.empty:
        bad = cv[~cv["within"]]
        if bad.empty:
            out.append(f"Convergence: all {len(cv)} checked run(s) stay within tolerance of "
                       "the single-process reference.")
        else:
            who = ", ".join(f"{r['label']} at {_ranks(r['world_size'])} on {r['workload']} "
                            f"(max rel dev {r['max_rel_dev']:.3g} > {r['tolerance']:.3g})"
                            for _, r in bad.iterrows())
            out.append(f"Convergence: outside tolerance: {who}.")
    if ba is not None and not ba.empty:
        n = ba["verdict"].str.replace(" (indicative)", "", regex=False).value_counts()
        out.append(f"Run B vs run A, over {len(ba)} matching throughput measurements: "
                   f"{n.get('B faster', 0)} faster in B, {n.get('A faster', 0)} slower in B, "
                   f"{n.get(verdicts.EQUIVALENT, 0)} equivalent within "
                   f"±{margin * 100:g}%, {n.get(verdicts.INCONCLUSIVE, 0)} inconclusive.")
    st = data.cells["status"].value_counts() if not data.cells.empty else pd.Series(dtype=int)
    bad = int(st.get("failed", 0) + st.get("timeout", 0) + st.get("interrupted", 0))
    pending, unreadable = int(st.get("pending", 0)), int(st.get(UNREADABLE, 0))
    if bad or pending:
        out.append(f"{bad} cell(s) failed, timed out or were interrupted and {pending} did "
                   "not run every repetition (pending: resume the run); they are left out of "
                   "every comparison (see Failed cells).")
    if unreadable:
        who = ", ".join(data.cells.loc[data.cells["status"] == UNREADABLE, "cell_id"])
        out.append(f"{unreadable} passed cell(s) have a results file that cannot be read "
                   f"(unreadable: {who}); they are left out of every comparison (see Failed "
                   "cells for the file and the reason).")
    return out


if __name__ == "__main__":
    d = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    c = hvd_vs_ddp(d.throughput)
    for line in [v.text() for v in c.get("judged", [])] + headlines(d, c):
        print(line)

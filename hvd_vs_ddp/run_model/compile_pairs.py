"""Compiled against eager, per library: the pairs the report's "Compiled" section shows
(hvd_vs_ddp/reports/compiled_section.py) and `run --budget` settles, judged once, here.

For every throughput cell whose knob set compiles (knobs "compile", docs/compile.md), its
eager twin is the cell of the same run, library (series), workload, per-rank batch and
world size whose knobs differ only in the compile mode. Per such pair: throughput compiled
/ eager with its interval and verdict (worded as a run-against-run comparison, so a 1-rank
pair is not called "framework overhead"), compile seconds (median over repetitions of the
warm-up steps that compiled, cold and warm cache apart), graphs, graph breaks, the
subgraphs of Dynamo's DDP optimizer, recompiles during the timed rounds, and whether
compiled and eager trained the same losses (LOSS_TOLERANCE).

    from hvd_vs_ddp.run_model.compile_pairs import pairs
    pairs(build_frames([load_judged_run(p)]), margin=0.05)   # one row per compiled cell
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.frames import POOL_KEY, Data, rep_samples

EAGER = "eager"
# Compiled against eager losses of one backend: the largest relative per-step deviation
# called "the same training". The convergence suite's stated tolerance
# (suites/test_convergence.py COMPILED_TOLERANCE; the run model never imports the suites).
LOSS_TOLERANCE = 1e-4
# Knob fields that name the set or the compile mode: a compiled cell's eager twin
# differs from it only in these.
_NOT_THE_CASE = ("name", "compile")
_TWIN = ["run", "workload", "workload_params", "per_rank_batch", "world_size", "label",
         "launcher"]


def _knobs(r: pd.Series) -> dict[str, Any]:
    k = r.get("knobs_dict")
    return k if isinstance(k, dict) else json.loads(r["knobs"])


def mode(r: pd.Series) -> str:
    mode = r.get("compile_mode")
    return mode if isinstance(mode, str) and mode else _knobs(r).get("compile", EAGER)


def _rest(r: pd.Series) -> str:
    return json.dumps({k: v for k, v in _knobs(r).items() if k not in _NOT_THE_CASE},
                      sort_keys=True, default=str)


def _reps_of(data: Data, r: pd.Series) -> pd.DataFrame:
    """The repetitions of a pooled throughput row."""
    mine = data.throughput_reps
    for k in POOL_KEY:
        mine = mine[mine[k] == r[k]]
    return mine


def _compile_seconds(reps: pd.DataFrame) -> tuple[list[float], list[float]]:
    """Each repetition's compile seconds, (cold, warm) by the cache it compiled into."""
    cold: list[float] = []
    warm: list[float] = []
    for _, rep in reps.iterrows():
        info, seconds = rep.get("compile_info"), rep.get("compile_s")
        if not isinstance(info, dict) or seconds is None or pd.isna(seconds):
            continue
        (warm if str(info.get("cache", "")).startswith("warm") else cold).append(float(seconds))
    return cold, warm


def _max_rel_dev(a: Any, b: Any) -> float | None:
    if not (isinstance(a, list) and isinstance(b, list) and a and len(a) == len(b)):
        return None
    x, y = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-12)))


def pairs(data: Data, margin: float) -> pd.DataFrame:
    """One row per compiled throughput cell that has an eager twin."""
    tp = data.throughput
    if tp.empty:
        return pd.DataFrame()
    tp = tp.assign(_mode=[mode(r) for _, r in tp.iterrows()],
                   _rest=[_rest(r) for _, r in tp.iterrows()])
    eager = tp[tp["_mode"] == EAGER]
    rows = []
    for _, c in tp[tp["_mode"] != EAGER].iterrows():
        e = eager
        for k in [*_TWIN, "_rest"]:
            e = e[e[k] == c[k]]
        if e.empty:
            continue
        e = e.iloc[0]
        ci = verdicts.interval(rep_samples(c), rep_samples(e), c.get("plan"))  # run --budget: looks
        # compiled vs eager of one library, run against run: never the 1-rank wording
        v = verdicts.judge(ci, margin, 2, f"{c['series']} compiled", f"{c['series']} eager")
        reps = _reps_of(data, c)
        cold, warm = _compile_seconds(reps)
        infos = [i for i in reps.get("compile_info", []) if isinstance(i, dict)]
        recompiles = [float(v) for v in reps.get("recompiles_timed", []) if not pd.isna(v)]
        dev = _max_rel_dev(c.get("losses"), e.get("losses"))
        rows.append({
            "run": c["run"], "case": e["case"], "compiled_case": c["case"],
            "workload": c["workload"], "world_size": int(c["world_size"]),
            "series": c["series"], "label": c["label"], "mode": c["_mode"],
            "cell": c["cell_id"], "eager_cell": e["cell_id"],  # run --budget's cells
            "eager_sps": e["sps_median"], "compiled_sps": c["sps_median"],
            "ratio": ci.ratio, "lo": ci.lo, "hi": ci.hi, "reps": ci.reps,
            "verdict": v.verdict, "judged": v,
            "compile_cold_s": float(np.median(cold)) if cold else np.nan,
            "compile_warm_s": float(np.median(warm)) if warm else np.nan,
            "graphs": c.get("graphs"), "graph_breaks": c.get("graph_breaks"),
            "ddp_buckets": next((i.get("ddp_optimizer_buckets") for i in infos
                                 if i.get("ddp_optimizer_buckets")), None),
            "optimize_ddp": next((i.get("optimize_ddp") for i in infos), None),
            "break_reasons": {k: n for i in infos[:1]
                              for k, n in (i.get("graph_break_reasons") or {}).items()},
            "recompiles_timed": max(recompiles) if recompiles else np.nan,
            "still_compiling": any(i.get("still_compiling") for i in infos),
            "loss_dev": dev, "same_losses": None if dev is None else dev <= LOSS_TOLERANCE})
    return pd.DataFrame(rows)

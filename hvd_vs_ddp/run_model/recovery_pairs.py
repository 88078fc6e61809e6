"""Horovod Elastic against each torch-side recovery path: the pairs the report's "Failure
and recovery" section shows (hvd_vs_ddp/reports/recovery_section.py) and `run --budget`
settles, judged once, here.

Per run and world size, Horovod Elastic against each torch-side series (torchrun with each
checkpoint pattern, torchft) on time to recover: each trial is one repetition's value, the
ratio of medians with its two-level bootstrap interval (hvd_vs_ddp/run_model/stats.py) and
the margin's words (hvd_vs_ddp/run_model/verdicts.py; in a budgeted run the sequential
interval at the pair's look); and on steps lost.

    from hvd_vs_ddp.run_model.recovery_pairs import frame, plans_of, verdicts
    verdicts(frame(data), margin, plans_of(data))   # one dict per pair
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.run_model.frames import Data
from hvd_vs_ddp.run_model.verdicts import interval, judge

NAMES = {"horovod-elastic": "Horovod Elastic", "torchrun-elastic": "torchrun elastic",
         "torchft": "torchft"}


def _series(r: pd.Series) -> str:
    return f"{NAMES.get(r['path'], r['path'])} ({r['checkpoint']})"


def frame(data: Data) -> pd.DataFrame:
    df = data.frames.get("recovery", pd.DataFrame())
    if df.empty:
        return df
    df = df.copy()
    df["series"] = [_series(r) for _, r in df.iterrows()]
    return df.sort_values(["run", "world_size", "library", "checkpoint", "rep"], kind="stable")


def median(values) -> float | None:
    vals = [v for v in values if v is not None and not pd.isna(v)]
    return float(np.median(vals)) if vals else None


def _reps(g: pd.DataFrame, col: str) -> list[list[float]]:
    return [[float(v)] for v in g[col] if v is not None and not pd.isna(v) and v > 0]


def _horovod(g: pd.DataFrame) -> pd.Series:
    """The rows trained by a Horovod backend (its catalog row's library)."""
    return g["backend"].map(catalog.library) == catalog.HOROVOD_LIB


def plans_of(data: Data) -> dict[str, Any]:
    """Each run's budget plan (run --budget), by run name; None for a fixed design."""
    return {r.name: getattr(r.manifest, "budget", None) for r in data.runs}


def verdicts(df: pd.DataFrame, margin: float,
             plans: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Horovod Elastic vs every torch-side series, per run and world size. In a run with
    a budget (plans: plans_of) the interval is the sequential one at the pair's look."""
    out = []
    for (run, world), g in df.groupby(["run", "world_size"], sort=False):
        hvd = g[_horovod(g)]
        for (_path, _ckpt, series), t in g[~_horovod(g)].groupby(
                ["path", "checkpoint", "series"], sort=False):
            for h_series, h in hvd.groupby("series", sort=False):
                out.append(_pair(run, int(world), h_series, h, series, t, margin,
                                 (plans or {}).get(run)))
    return out


def _pair(run, world, a, ga, b, gb, margin, plan=None) -> dict[str, Any]:
    row: dict[str, Any] = {"run": run, "world_size": world, "a": a, "b": b,
                           "trials": [len(ga), len(gb)],
                           "cells": {"a": sorted(set(ga["cell_id"])),  # run --budget
                                     "b": sorted(set(gb["cell_id"]))}}
    ra, rb = _reps(ga, "recovery_s"), _reps(gb, "recovery_s")
    if ra and rb:
        # b / a: > 1 means a (Horovod) went on sooner after the kill
        v = judge(interval(rb, ra, plan), margin, max(world, 2), a, b)
        ma, mb = median(ga["recovery_s"]), median(gb["recovery_s"])
        row["time_to_recover"] = {**v.as_json(), "scope": "recovery", "a_median_s": ma,
                                  "b_median_s": mb,
                                  "text": _recover_text(v, ma, mb)}
    else:
        row["time_to_recover"] = None
    la, lb = [v for v in ga["steps_lost"].dropna()], [v for v in gb["steps_lost"].dropna()]
    if la and lb:
        same = set(la) == set(lb) and len(set(la)) == 1
        text = (f"steps lost: equal, {int(la[0])} each (the same commit schedule)" if same
                else f"steps lost: {a} median {np.median(la):g}, {b} median "
                     f"{np.median(lb):g}")
        row["steps_lost"] = {"a": [int(x) for x in la], "b": [int(x) for x in lb],
                             "equal": same, "text": text}
    else:
        row["steps_lost"] = None
    row["world_after"] = {"a": sorted({int(x) for x in ga["world_after"].dropna()}),
                          "b": sorted({int(x) for x in gb["world_after"].dropna()})}
    return row


def _recover_text(v, ma: float | None, mb: float | None) -> str:
    """The verdict in recovery's words: who trains again sooner after the kill."""
    r = v.ci.ratio
    band = f"median {ma:.2f} s vs {mb:.2f} s; ratio {r:.2f} [{v.ci.lo:.2f}-{v.ci.hi:.2f}]"
    if v.verdict == "faster":
        k = r if v.faster == v.a else 1 / r
        slow = v.b if v.faster == v.a else v.a
        s = f"{v.faster} trained again {k:.1f}x sooner after the kill than {slow} ({band})"
    elif v.verdict == "equivalent":
        s = f"{v.a} and {v.b} trained again equally soon within ±{v.margin * 100:g}% ({band})"
    else:
        s = f"{v.a} vs {v.b}: inconclusive ({band}; more trials would settle it)"
    if v.strength == "indicative":
        s += "; indicative only: one trial per side"
    if v.ci.look is not None:  # a budgeted run: what the verdict took
        s += f"; after {v.ci.reps} trials (look {v.ci.look}, {v.ci.level:.2%} interval)"
    return "time to recover: " + s

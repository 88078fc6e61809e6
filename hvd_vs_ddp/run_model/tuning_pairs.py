"""Each library at its best: the pairs the report's "Each at its best" section shows
(hvd_vs_ddp/reports/tuning.py) and `run --budget` settles, judged once, here.

For a run with per-library knob sets (the tune preset, hvd_vs_ddp/harness/knobs.py), per
workload and world size: the verdict at defaults (knob set "default" on both sides), the
verdict between the fastest Horovod and the fastest DDP over all their knob sets, the gain
tuning bought each library (tuned / default), and the host habits against their default.
A set that changes the averaged numbers (fp16/bf16 compression, PowerSGD, Adasum) is
crowned only when it passed its loss check (`loss_check`: the suite's derived bound,
hvd_vs_ddp/harness/loss_bound.py; older results: LOOSE_TOLERANCE of the library's default).

    from hvd_vs_ddp.run_model.tuning_pairs import at_best
    at_best(build_frames([load_judged_run(p)]), margin=0.05)   # one entry per workload and size
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import DDP, HOROVOD_LIB
from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.frames import Data, rep_samples

# Relative excess of the mean loss over the last half of the steps, against the same
# library's default cell. fp16 rounding of gradients moves a short run's losses by
# ~1e-3 relative and PowerSGD's low-rank gradients by ~1e-2 (measured on mlp at 2
# ranks: 3e-3 for rank 1 over 24 steps); 2% separates "approximately the same
# training" from a setting that trains visibly worse within a benchmark's few steps.
LOOSE_TOLERANCE = 0.02
CASE = ["run", "workload", "workload_params", "per_rank_batch", "world_size"]
MATH_NOTE = {"fp16": "fp16 gradients", "bf16": "bf16 gradients",
             "powersgd": "PowerSGD low-rank gradients"}


def _knobs(r: pd.Series) -> dict[str, Any]:
    k = r.get("knobs_dict")
    return k if isinstance(k, dict) else json.loads(r["knobs"])


def changes_maths(k: dict[str, Any]) -> str | None:
    """What the set changes in the averaged numbers, or None."""
    parts = [MATH_NOTE.get(k.get("compression", "none"), "")] + \
        (["Adasum instead of an average"] if k.get("adasum") else [])
    return "; ".join(p for p in parts if p) or None


def settings(k: dict[str, Any]) -> str:
    """The knobs that differ from the library defaults, as "name=value" text."""
    base = {"compression": "none", "bucket_mb": None, "side": "both", "powersgd_rank": 1,
            "cycle_time_ms": None}
    shown = {n: v for n, v in k.items() if v not in (False, 0, None) and base.get(n, v) != v
             and n not in ("precision", "num_workers", "set_to_none")}
    shown.pop("accumulation_steps", None) if k.get("accumulation_steps") == 1 else None
    return ", ".join(f"{n}={v}" for n, v in sorted(shown.items()) if n != "side") or "defaults"


def loss_check(row: pd.Series, default: pd.Series | None) -> dict[str, Any]:
    """Does a set that changes the maths train like it should? The suite's own check when
    the results carry it (the mean loss of the last half of the steps against `single`'s
    on the same batches, within the set's stated bound: hvd_vs_ddp/harness/loss_bound.py;
    "against": "reference"); for older results, the same mean against the library's default
    cell within LOOSE_TOLERANCE ("against": "default")."""
    maths = changes_maths(_knobs(row))
    if maths is None:
        return {"changes": None, "ok": True, "excess": None, "bound": None, "against": None}
    suite = row.get("loss_check")
    if isinstance(suite, dict) and suite.get("deviation") is not None:
        derived = {key: suite[key] for key in ("sensitivity", "floor", "probe", "factor",
                                                "envelope", "fault_line", "fault")
                   if key in suite}
        return {"changes": maths, "ok": bool(suite["within"]),
                "excess": float(suite["deviation"]), "bound": float(suite["bound"]),
                "against": "reference", **derived}
    a = row.get("losses")
    b = default.get("losses") if default is not None else None
    if not (isinstance(a, list) and isinstance(b, list) and a and len(a) == len(b)):
        return {"changes": maths, "ok": None, "excess": None, "bound": None,
                "against": None}  # not checked
    half = len(a) // 2
    mine, ref = float(np.mean(a[half:])), float(np.mean(b[half:]))
    excess = (mine - ref) / max(abs(ref), 1e-12)
    return {"changes": maths, "ok": bool(excess <= LOOSE_TOLERANCE), "excess": excess,
            "bound": LOOSE_TOLERANCE, "against": "default"}


def not_a_setting(k: dict[str, Any]) -> str | None:
    """Why a measured set is never crowned whatever its speed, or None."""
    if k.get("autotune"):
        return "timed while Horovod's autotune was still trying parameters"
    if k.get("host_sync") or k.get("empty_cache"):
        return "a host habit whose cost is measured, not a tuning"
    return None


def _pick(g: pd.DataFrame) -> tuple[pd.Series | None, pd.Series | None, list[dict]]:
    """(default row, fastest crowned row, every row's loss check) of one library."""
    default = next((r for _, r in g.iterrows() if r["knob_set"] == "default"), None)
    checks, crowned = [], []
    for _, r in g.iterrows():
        c = loss_check(r, default)
        why = not_a_setting(_knobs(r))
        checks.append({"knob_set": r["knob_set"], "series": r["series"],
                       "samples_per_s": float(r["sps_median"]), **c, "not_crowned": why})
        if c["ok"] and why is None:
            crowned.append(r)
    best = max(crowned, key=lambda r: r["sps_median"]) if crowned else None
    return default, best, checks


def _judge(a: pd.Series, b: pd.Series, margin: float, ws: int, na: str, nb: str):
    ci = verdicts.interval(rep_samples(a), rep_samples(b), a.get("plan"))
    return verdicts.judge(ci, margin, ws, na, nb)


def _chosen(r: pd.Series) -> str:
    """What an autotuned Horovod cell ran with (its backend_meta), not 'defaults'."""
    meta = r.get("backend_meta")
    if not (_knobs(r).get("autotuned") or r["knob_set"] == "hvd-autotuned") \
            or not isinstance(meta, dict) or "fusion_threshold_bytes" not in meta:
        return settings(_knobs(r))
    return (f"autotune's choice: fusion {meta['fusion_threshold_bytes'] / 2**20:g} MiB, "
            f"cycle {meta.get('cycle_time_ms', 1.0):g} ms")


def _side(r: pd.Series | None) -> dict[str, Any] | None:
    return None if r is None else {"series": r["series"], "knob_set": r["knob_set"],
                                   "cell": r["cell_id"],  # run --budget adds to it
                                   "settings": _chosen(r),
                                   "samples_per_s": float(r["sps_median"]),
                                   "repetitions": int(r.get("n_reps", 1))}


def at_best(data: Data, margin: float) -> list[dict[str, Any]]:
    """One entry per (run, workload, world size) of a run with per-library knob sets."""
    tp, out = data.throughput, []  # type: pd.DataFrame, list[dict[str, Any]]
    if tp.empty or "knobs" not in tp:
        return out
    tuned = tp[[_knobs(r).get("side", "both") != "both" for _, r in tp.iterrows()]]
    case = CASE + (["link"] if "link" in tp else [])  # a link's cells apart (hvd_vs_ddp/links/)
    for key, g in tp.groupby(case, sort=True):
        if tuned.empty or not (tuned[case] == pd.Series(key, index=case)).all(axis=1).any():
            continue
        ws = int(key[CASE.index("world_size")])
        link = key[-1] if len(key) > len(CASE) else "loopback"
        hd, hb, hc = _pick(g[g["library"] == HOROVOD_LIB])
        dd, db, dc = _pick(g[g["library"] == DDP])
        e: dict[str, Any] = {"run": key[0], "workload": key[1] + (
                                 "" if link == "loopback" else f" [link {link}]"),
                             "world_size": ws,
                             "best_horovod": _side(hb), "best_ddp": _side(db),
                             "checks": hc + dc}
        e["at_defaults"] = (_judge(hd, dd, margin, ws, "horovod", "ddp").as_json()
                            if hd is not None and dd is not None else None)
        e["at_best"] = (_judge(hb, db, margin, ws, "best horovod", "best ddp").as_json()
                        if hb is not None and db is not None else None)
        e["gain_horovod"] = (_judge(hb, hd, margin, ws, "tuned", "default").as_json()
                             if hb is not None and hd is not None else None)
        e["gain_ddp"] = (_judge(db, dd, margin, ws, "tuned", "default").as_json()
                         if db is not None and dd is not None else None)
        e["habits"] = [{"knob_set": r["knob_set"], "series": r["series"],
                        **_judge(r, base, margin, ws, r["knob_set"], "default").as_json()}
                       for lib, base in ((HOROVOD_LIB, hd), (DDP, dd)) if base is not None
                       for _, r in g[g["library"] == lib].iterrows()
                       if _knobs(r).get("host_sync") or _knobs(r).get("empty_cache")]
        out.append(e)
    return out

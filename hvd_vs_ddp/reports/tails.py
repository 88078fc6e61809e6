"""Tails and stragglers: what a median hides.

Per throughput cell (repetitions pooled): the p50/p95/p99 step time and its
coefficient of variation (standard deviation / mean) over the timed steps after the
first; the first timed step of each repetition apart from the rest (its median over
repetitions, and how many times the median of the rest it is), since the first step
after warm-up often still pays for allocation or connection set-up.

Per rank (from rank_step_times, every rank's time of every timed step): how often it
was the slowest rank of a step, and by how much (median over those steps of its
time minus the median of the other ranks). A rank is named a straggler when it is the
slowest in most steps (more than half) and that is unlikely to be chance: the
one-sided binomial probability of so many "slowest" steps, were every rank equally
likely to be slowest (1/world size), is below 1%.

    from hvd_vs_ddp.reports.tails import tails, stragglers
    tails(data.throughput); stragglers(data.throughput)
    python -m hvd_vs_ddp.reports.tails RUN_DIR...     # prints both frames
"""
from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd

STRAGGLER_P = 0.01


def tails(tp: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in tp.iterrows():
        reps = r.get("rep_steps")
        reps = list(reps) if isinstance(reps, list) else [r["steps"]]
        first = np.array([rep[0] for rep in reps if len(rep)])
        rest = np.concatenate([np.asarray(rep[1:], float) for rep in reps])
        if rest.size == 0:  # one timed step per repetition: nothing but first steps
            rest = first
        p50, p95, p99 = np.percentile(rest, [50, 95, 99])
        rows.append({"run": r["run"], "case": r["case"], "series": r["series"],
                     "world_size": r["world_size"], "reps": len(reps), "steps": int(rest.size),
                     "p50": p50, "p95": p95, "p99": p99,
                     "cv": float(np.std(rest) / np.mean(rest)) if rest.size > 1 else np.nan,
                     "first": float(np.median(first)), "first_x": float(np.median(first) / p50)})
    return pd.DataFrame(rows)


def binom_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return float(sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def rank_slowest(rank_steps: list) -> list[dict]:
    """Per rank: steps where it was the slowest, their share, its median excess (s)."""
    mats = [np.asarray(m, float) for m in rank_steps if m is not None and np.size(m)]
    if not mats or mats[0].shape[0] < 2:
        return []
    t = np.concatenate(mats, axis=1)              # ranks x steps, repetitions joined
    slow = np.argmax(t, axis=0)
    n_ranks, n = t.shape
    out = []
    for k in range(n_ranks):
        at = np.flatnonzero(slow == k)
        others = np.delete(t[:, at], k, axis=0)
        excess = float(np.median(t[k, at] - np.median(others, axis=0))) if at.size else 0.0
        p = binom_tail(int(at.size), n, 1 / n_ranks)
        out.append({"rank": k, "slowest_steps": int(at.size), "steps": n,
                    "share": at.size / n, "excess": excess, "p": p,
                    "straggler": at.size > n / 2 and p < STRAGGLER_P})
    return out


def stragglers(tp: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in tp.iterrows():
        if r["world_size"] < 2:
            continue
        reps = r.get("rep_rank_steps")
        reps = list(reps) if isinstance(reps, list) else [r.get("rank_steps")]
        for s in rank_slowest(reps):
            rows.append({"run": r["run"], "case": r["case"], "series": r["series"],
                         "world_size": r["world_size"], **s})
    return pd.DataFrame(rows)


def straggler_notes(st: pd.DataFrame) -> list[str]:
    if st.empty:
        return []
    named = st[st["straggler"]]
    return [f"Straggler: rank {r['rank']} of {r['series']} on {r['case']} at "
            f"{r['world_size']} ranks was the slowest in {r['slowest_steps']} of {r['steps']} "
            f"steps, by a median {r['excess'] * 1e3:.2f} ms (p = {r['p']:.2g})."
            for _, r in named.iterrows()]


if __name__ == "__main__":
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    d = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    print(tails(d.throughput).to_string())
    print(stragglers(d.throughput).to_string())

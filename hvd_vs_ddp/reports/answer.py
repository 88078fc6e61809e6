"""The one answer per workload and world size, and verdicts.json for other tools.

For every case (workload, its parameters, per-rank batch, knob set) and world size of
a run, one sentence: the fastest configuration measured; the ratio of the best
Horovod (highest median samples/s) to the best DDP with its interval and verdict
(hvd_vs_ddp.run_model.verdicts: faster / equivalent within the margin / inconclusive; indicative
with one repetition; framework overhead without communication at 1 rank); and whether
both trained to the same losses (their per-step losses in the throughput cells, else
the convergence check). The same answers, with every pairwise verdict and the passed
cells whose results could not be read (left out of every answer), are written as
verdicts.json beside report.html; its format is docs/verdicts-format.md.

    from hvd_vs_ddp.reports.answer import answers, verdicts_doc
    for a in answers(data, cmp, margin=0.05): print(a["sentence"])
    python -m hvd_vs_ddp.reports.answer RUN_DIR...      # prints verdicts.json
"""
from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends.catalog import DDP, HOROVOD_LIB
from hvd_vs_ddp.run_model import pace, verdicts
from hvd_vs_ddp.run_model.frames import CASE_KEY, Data
from hvd_vs_ddp.run_model.tuning_pairs import at_best

FORMAT, FORMAT_VERSION = "hvd-vs-ddp/verdicts", 1
# The convergence suite's tolerance (suites/test_convergence.py; reports never import
# the suites): the largest relative deviation of two runs' per-step losses called equal.
LOSS_TOLERANCE = 1e-4


def _ranks(n: int) -> str:
    return f"{n} rank" + ("" if n == 1 else "s")


def _best(g: pd.DataFrame) -> pd.Series | None:
    return None if g.empty else g.loc[g["sps_median"].idxmax()]


def _side(r: pd.Series | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"series": r["series"], "backend": r["backend"], "launcher": r["launcher"],
            "samples_per_s": float(r["sps_median"]), "repetitions": int(r.get("n_reps", 1))}


def losses_check(data: Data, h: pd.Series, d: pd.Series) -> dict[str, Any]:
    """Same losses? From the two cells' own per-step losses, else the convergence check."""
    a, b = h.get("losses"), d.get("losses")
    if isinstance(a, list) and isinstance(b, list) and a and len(a) == len(b):
        x, y = np.asarray(a, float), np.asarray(b, float)
        dev = float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-12)))
        return {"same": dev <= LOSS_TOLERANCE, "max_rel_dev": dev,
                "tolerance": LOSS_TOLERANCE, "source": "throughput"}
    cv = data.convergence
    if not cv.empty:
        mine = cv[(cv["run"] == h["run"]) & (cv["world_size"] == h["world_size"])
                  & cv["label"].isin([h["label"], d["label"]])]
        if set(mine["label"]) == {h["label"], d["label"]}:
            return {"same": bool(mine["within"].all()),
                    "max_rel_dev": float(mine["max_rel_dev"].max()),
                    "tolerance": float(mine["tolerance"].max()), "source": "convergence"}
    return {"same": None, "max_rel_dev": None, "tolerance": None, "source": None}


def _loss_clause(c: dict[str, Any]) -> str:
    if c["same"] is None:
        return "losses not compared (no per-step losses or convergence check for both)"
    where = ("per-step losses" if c["source"] == "throughput"
             else "convergence vs the single-process reference")
    if c["same"]:
        return (f"both trained to the same losses ({where}: max relative deviation "
                f"{c['max_rel_dev']:.2g} <= {c['tolerance']:.0e})")
    return (f"their losses DIFFER ({where}: max relative deviation {c['max_rel_dev']:.2g} "
            f"> {c['tolerance']:.0e})")


def answers(data: Data, cmp: pd.DataFrame, margin: float) -> list[dict[str, Any]]:
    """One answer per (run, case, world size) with a Horovod/DDP comparison or cells."""
    tp, out = data.throughput, []  # type: pd.DataFrame, list[dict[str, Any]]
    if tp.empty:
        return out
    multi = len(data.runs) > 1
    for key, g in tp.groupby(CASE_KEY + ["world_size"], sort=True):
        run, ws = key[0], key[-1]
        case = g["case"].iloc[0]
        fastest = _best(g)
        h, d = _best(g[g["library"] == HOROVOD_LIB]), _best(g[g["library"] == DDP])
        pre = (f"[{run}] " if multi else "") + f"{case} at {_ranks(int(ws))}: "
        assert fastest is not None
        sentence = (f"{pre}fastest measured: {fastest['series']} "
                    f"({fastest['sps_median']:.1f} samples/s)")
        judged, loss = None, None
        if h is not None and d is not None:
            row = cmp[(cmp["run"] == run) & (cmp["case"] == case) & (cmp["world_size"] == ws)
                      & (cmp["horovod"] == h["series"]) & (cmp["ddp"] == d["series"])]
            judged = row["judged"].iloc[0]
            loss = losses_check(data, h, d)
            sentence += (f"; best Horovod / best DDP: {judged.text()}; "
                         f"{_loss_clause(loss)}.")
        else:
            sentence += "; no Horovod/DDP pair measured here."
        out.append({"run": run, "case": case, "workload": g["workload"].iloc[0],
                    "input": g["input_mode"].iloc[0],  # the input pipeline
                    "world_size": int(ws), "fastest": _side(fastest), "best_horovod": _side(h),
                    "best_ddp": _side(d),
                    "comparison": judged.as_json() if judged is not None else None,
                    "losses": loss, "sentence": sentence})
    return out


# --- where the answers hold (hvd_vs_ddp/reports/conditions.py) -----------------------
def where_it_holds(data: Data) -> list[str]:
    """One line per run: the device kind and count, cores per rank, the link between
    ranks, and (labelled) what a projection onto GPUs expects for the same workload."""
    from hvd_vs_ddp.reports.conditions import where_it_holds as lines
    return lines(data)
# --- end of where the answers hold --------------------------------------------------


def variance_split(data: Data) -> list[dict[str, Any]]:
    """Per throughput cell with 2+ repetitions: how much of its repetition mean's variance
    is between repetitions and how much step to step (hvd_vs_ddp/run_model/variance.py),
    and the timed steps per process that would buy the most precision per second
    (`steps_that_pay`: a process's cost before its first timed step is its start-up, the
    pace probe and its warm-up steps)."""
    from hvd_vs_ddp.run_model.variance import split, steps_that_pay
    tp = data.throughput
    out = []
    for _, r in (tp.iterrows() if not tp.empty else []):
        reps = r.get("rep_samples")
        v = split(reps) if isinstance(reps, list) else None
        if v is not None:
            step = float(r["step_median"])
            start = float(r["startup_s"]) if pd.notna(r.get("startup_s")) else 0.0
            process = start + PROBE_S + step * float(r.get("warmup_steps") or 0)
            out.append({"run": r["run"], "case": r["case"], "world_size": int(r["world_size"]),
                        "series": r["series"], "library": r["library"], **v.as_json(),
                        "steps_that_pay": (steps_that_pay(v, process, step)
                                           if step > 0 else None)})
    return out


PROBE_S = 1.0  # the pace probe before the backend (hvd_vs_ddp/harness/pace.py), about


def verdicts_doc(data: Data, cmp: pd.DataFrame, margin: float) -> dict[str, Any]:
    """The verdicts.json document (docs/verdicts-format.md)."""
    pairs = [{"run": r["run"], "case": r["case"], "world_size": int(r["world_size"]),
              "input": r.get("input_mode", "memory"), **r["judged"].as_json(),
              **({"pace": r["pace"]} if isinstance(r.get("pace"), dict) else {})}
             for _, r in cmp.iterrows()] if not cmp.empty else []
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "margin": margin,
            "level": 0.95, "runs": [{"name": r.name, "path": str(r.path),
                                     "repeat": r.manifest.repeat or 1}
                                    for r in data.runs],
            "answers": answers(data, cmp, margin), "holds_for": where_it_holds(data),
            "pairs": pairs,
            "budget": {r.name: r.manifest.budget for r in data.runs
                       if getattr(r.manifest, "budget", None)},  # run --budget
            "each_at_its_best": at_best(data, margin),
            "variance_split": variance_split(data),
            "pace": pace.kinds_table(data.throughput, data.compute_only),
            "pace_sources": pace.sources(data.throughput),
            "unreadable": [{"run": r.name, "cell": c.id, "reason": c.unreadable}
                           for r in data.runs for c in r.unreadable]}


if __name__ == "__main__":
    from hvd_vs_ddp.reports.compare import add_scaling
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp
    dat = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    c = hvd_vs_ddp(add_scaling(dat.throughput))
    print(json.dumps(verdicts_doc(dat, c, verdicts.DEFAULT_MARGIN), indent=1))

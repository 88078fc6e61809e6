"""Horovod against DDP on throughput: the pairs every verdict of the report, the answer
box and `run --budget` rests on, judged once, here.

Horovod is compared with every ddp-* transport measured in the same run on the same case
(workload, its parameters, per-rank batch, knob set, knobs and input mode) and world size;
the ratio is horovod/ddp samples per second (> 1: Horovod faster), its interval from the
two-level bootstrap over repetitions and steps (hvd_vs_ddp.run_model.stats; in a budgeted
run the sequential interval at the pair's look) and its verdict with a practical margin
(hvd_vs_ddp.run_model.verdicts). Each pair has two readings, as measured and with each
process's pace taken out (hvd_vs_ddp/run_model/pace.py); the verdict uses the adjusted one
only where the gate lets it, and the row says which (`reading`, `reading_why`), keeping
the unadjusted interval (`unadj_*`) beside it. The report renders these rows
(hvd_vs_ddp/reports/compare.py, tables.py); the budget settles them
(hvd_vs_ddp/cli/budget.py, through hvd_vs_ddp/run_model/judged.py).

    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp
    cmp = hvd_vs_ddp(build_frames([load_judged_run(p)]).throughput, margin=0.05)
    python -m hvd_vs_ddp.run_model.judged RUN_DIR     # every pair of a run, one line each
"""
from __future__ import annotations

import pandas as pd

from hvd_vs_ddp.backends.catalog import DDP, HOROVOD_LIB
from hvd_vs_ddp.run_model import pace, verdicts
from hvd_vs_ddp.run_model.frames import CASE_KEY


def hvd_vs_ddp(tp: pd.DataFrame, margin: float = verdicts.DEFAULT_MARGIN) -> pd.DataFrame:
    """One row per (case, world size, horovod series, ddp series) measured together."""
    rows: list[dict] = []
    if tp.empty:
        return pd.DataFrame(rows)
    thetas = pace.fit_thetas(tp)
    for _, g in tp.groupby(CASE_KEY + ["world_size"], sort=True):
        hv = g[g["library"] == HOROVOD_LIB]
        dd = g[g["library"] == DDP]
        for _, h in hv.iterrows():
            for _, d in dd.iterrows():
                # run --budget: the sequential interval at the look; the reading that counts
                read = pace.reading(pace.arm(h), pace.arm(d), thetas, h.get("plan"))
                ci = read.ci
                v = verdicts.judge(ci, margin, h["world_size"], h["series"], d["series"])
                rows.append({"run": h["run"], "case": h["case"], "world_size": h["world_size"],
                             "input_mode": h.get("input_mode", "memory"),
                             "horovod": h["series"], "ddp": d["series"],
                             "hvd_sps": h["sps_median"], "ddp_sps": d["sps_median"],
                             "ratio": ci.ratio, "lo": ci.lo, "hi": ci.hi, "reps": ci.reps,
                             "verdict": v.verdict, "faster": v.faster or "",
                             "strength": v.strength, "scope": v.scope,
                             "reps_needed": v.reps_needed, "judged": v,
                             "hvd_cell": h["cell_id"], "ddp_cell": d["cell_id"],
                             "reading": read.reading, "reading_why": read.why,
                             "unadj_ratio": read.unadjusted.ratio,
                             "unadj_lo": read.unadjusted.lo, "unadj_hi": read.unadjusted.hi,
                             "pace": read.as_json()})
    return pd.DataFrame(rows)

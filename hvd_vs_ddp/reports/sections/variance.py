"""Section "Where the variance comes from": per throughput series with 2 or more
repetitions, how much of a repetition mean's spread is between fresh processes and how
much step to step (hvd_vs_ddp/run_model/variance.py, the same rows as verdicts.json's
`variance_split`), and how many repetitions a side an A/A pair would need at that spread
for "equivalent" at the report's margin; then, per cell kind, how much of the spread
between processes each process's measured pace explains (hvd_vs_ddp/run_model/pace.py,
verdicts.json's `pace`) and which pairs' verdicts used the pace-adjusted reading.

    python -m hvd_vs_ddp.reports RUN_DIR      # the section is in the report it writes
"""
from __future__ import annotations

import pandas as pd

from hvd_vs_ddp.reports.answer import variance_split
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section
from hvd_vs_ddp.reports.tables import Table
from hvd_vs_ddp.run_model import pace
from hvd_vs_ddp.run_model.variance import VarianceSplit, reps_for_equivalence

TITLE = "Where the variance comes from"
SHOWN_UP_TO = 1000  # beyond it the count only says "not on this machine"


def _count(n: int) -> str:
    return f"over {SHOWN_UP_TO}" if n > SHOWN_UP_TO else str(n)


def table(rows: list[dict], margin: float, many_runs: bool) -> Table:
    out = []
    for r in rows:
        v = VarianceSplit.from_json(r)
        out.append({**({"run": r["run"]} if many_runs else {}), "case": r["case"],
                    "ranks": r["world_size"], "backend": r["series"],
                    "reps": v.repetitions, "steps": f"{v.steps:g}",
                    "between reps (sd)": f"{v.between_sd:.1%}",
                    "step to step (sd)": f"{v.within_sd:.1%}",
                    "between share": f"{v.between_share:.0%}",
                    "reps for A/A 'equivalent'": _count(
                        reps_for_equivalence(v.repetition_sd, margin)),
                    "steps that pay": (f"{r['steps_that_pay']}" if r.get("steps_that_pay")
                                       else "")})
    return Table("Between repetitions and step to step, per series", pd.DataFrame(out),
                 "A repetition's mean samples/s varies by what differs from one fresh "
                 "process to the next (between reps: start-up, placement, the host's own "
                 "pace) and by what differs step to step inside one, divided by the timed "
                 "steps (sd of the log, so relative). Between share: the first part's share "
                 "of a repetition mean's variance; where it is high, more repetitions, not "
                 "more steps, narrow the intervals. Reps for A/A 'equivalent': repetitions "
                 "a side at which two runs of this same series have an even chance to be "
                 f"shown equivalent within ±{margin * 100:g}% (one look at 95%). Steps "
                 "that pay: the timed steps per process that buy the most precision per "
                 "second given what a process costs before its first timed step (Kalibera "
                 "& Jones 2013); far above the steps run, longer processes pay; near 1, "
                 "more processes do. "
                 "`python scripts/noise_floor.py RUN_DIR` sets these beside a process that "
                 "runs no library, this machine's own floor (docs/methodology.md).")


def pace_table(kinds: list[dict], cmp: pd.DataFrame, many_runs: bool) -> Table:
    out = []
    for k in kinds:
        label, ranks = k["kind"][0], k["kind"][1]
        used = (cmp[(cmp["horovod"].str.startswith(label) | cmp["ddp"].str.startswith(label))
                    & (cmp["world_size"] == ranks)] if not cmp.empty and "reading" in cmp
                else cmp.iloc[:0])
        out.append({**({"run": k.get("run", "")} if many_runs else {}), "kind": label,
                    "ranks": ranks, "processes": k["points"], "series": k["series"],
                    "rho": f"{k['rho']:+.2f}", "theta": f"{k['theta']:+.2f}",
                    "between processes (sd)": f"{k['sd_before']:.1%}",
                    "after the pace (sd)": f"{k['sd_after']:.1%}",
                    "pairs adjusted": (f"{int((used['reading'] == 'adjusted').sum())} of "
                                       f"{len(used)}")})
    return Table("The pace probe, per cell kind", pd.DataFrame(out),
                 "Every rank times the same fixed CPU work before its backend is set up and "
                 "after the timed rounds; a repetition's pace is the mean over its ranks. "
                 "rho: the correlation of that pace with the repetition's log samples/s, "
                 "both centred per series; theta: the slope used to take the pace out; the "
                 "sd of the log samples/s between processes before and after. A pair uses "
                 "the adjusted reading only when the library does not move the probe: the "
                 "95% interval of the probe's drift (after the rounds over before the "
                 "backend), Horovod's over DDP's, within ±2%. Otherwise its verdict is the "
                 "unadjusted one; verdicts.json keeps both readings of every pair.")


def build(ctx: ReportContext) -> Section | None:
    rows = variance_split(ctx.data)
    if not rows:
        return None
    tables: list = [table(rows, ctx.margin, ctx.multi)]
    kinds = pace.kinds_table(ctx.data.throughput, ctx.data.compute_only)
    if kinds:
        tables.append(pace_table(kinds, ctx.cmp, ctx.multi))
    return Section(TITLE, [*tables, *sources_text(pace.sources(ctx.data.throughput))])


WHAT = {"run_delay_s": "time waiting on a run queue", "nonvoluntary_switches":
        "involuntary context switches", "steal_s": "the hypervisor's steal time",
        "anon_huge_mb": "transparent huge pages"}


def sources_text(rows: list[dict]) -> list[str]:
    """One sentence: what went with the slow processes, as the host exposes it."""
    if not rows:
        return []
    parts = [f"{WHAT.get(r['counter'], r['counter'])} rho {r['rho']:+.2f}" for r in rows]
    return ["What went with the slower processes (each counter over the timed rounds, "
            "against the repetition's log samples/s, both centred per series; negative: "
            f"more of it in the slower ones, over {rows[0]['repetitions']} repetitions): "
            + "; ".join(parts) + "."]

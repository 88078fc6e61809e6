"""Each at its best: Horovod and DDP at their defaults and each at its fastest setting.

For a run with per-library knob sets (the tune preset, hvd_vs_ddp/harness/knobs.py), per workload
and world size: the verdict at defaults (knob set "default" on both sides) beside the
verdict between the fastest Horovod and the fastest DDP over all their knob sets, the
settings that won, and the gain tuning bought each library (tuned / default, with its
interval). The pairs are judged in hvd_vs_ddp/run_model/tuning_pairs.py (intervals and
verdicts: hvd_vs_ddp.run_model.stats / verdicts, unchanged); this module renders them.

Settings that change the numbers being averaged (fp16/bf16 compression, PowerSGD,
Adasum) are crowned only when they passed their loss bound: the throughput suite checks
each such set's mean loss against `single`'s on the same batches, within a bound derived
from the workload and run (hvd_vs_ddp/harness/loss_bound.py: the larger of the set's
floor and a multiple of the reference's own sensitivity to one rounding of its
gradients); results recorded before that are held to LOOSE_TOLERANCE of the same
library's default cell instead. Every check is listed with its deviation, its bound, the
reference's sensitivity and a mark (table "Loss checks"); a setting beyond its bound keeps
its throughput as a measurement, marked, and is never crowned; one whose losses cannot
be compared is "not checked" and not crowned.

    from hvd_vs_ddp.reports.tuning import section
    python -m hvd_vs_ddp.reports.tuning RUN_DIR       # prints the section's rows as JSON
"""
from __future__ import annotations

import json
import sys
from typing import Any

import pandas as pd

from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.tables import Table, r3, sps
from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.tuning_pairs import LOOSE_TOLERANCE, at_best


def _maths_line(e: dict[str, Any], c: dict[str, Any]) -> str:
    """What the loss check of one maths-changing set found, for the section's notes."""
    head = f"{e['workload']} at {e['world_size']} ranks: {c['series']} [{c['knob_set']}] " \
           f"({c['changes']}): "
    if c["ok"] is None:
        return head + "not checked (no per-step losses to compare); not crowned"
    if c["against"] == "reference":
        return head + (f"mean loss of the last half {c['excess'] * 100:.2g}% from single's "
                       f"on the same batches, {'within' if c['ok'] else 'BEYOND'} the set's "
                       f"bound of {c['bound'] * 100:.3g}% ({_bound_from(c)}; checked by the "
                       "suite)" + ("" if c["ok"] else f"; {mark(c)}; not crowned"))
    return head + (f"mean loss of the last half {c['excess'] * 100:+.1f}% vs its default"
                   + (f", within {LOOSE_TOLERANCE * 100:g}%" if c["ok"] else
                      f", beyond {LOOSE_TOLERANCE * 100:g}%: trains worse; not crowned"))


def _bound_from(c: dict[str, Any]) -> str:
    """Where a recorded bound came from: derived (the floor and the reference's own
    sensitivity, hvd_vs_ddp/harness/loss_bound.py) or fixed (results from before)."""
    if c.get("sensitivity") is None:
        return "the set's fixed bound"
    return (f"the larger of the floor {c['floor'] * 100:g}% and {c['factor']:g} x single's "
            f"own {c['probe']} sensitivity {c['sensitivity'] * 100:.3g}%"
            + (f" and Adasum's envelope (single summing its ranks' gradients) "
               f"{c['envelope'] * 100:.3g}%" if c.get("envelope") is not None else ""))


def mark(c: dict[str, Any]) -> str:
    """The mark of one loss check: what a reader does with the cell's throughput."""
    if c.get("changes") is None:
        return ""
    if c["ok"] is None:
        return "not checked"
    if c["ok"]:
        return "within"
    if c.get("fault"):
        return "FAULT: beyond the fault line (the cell failed)"
    return "BEYOND its bound: throughput kept as a measurement"


def loss_table(entries: list[dict[str, Any]]) -> Table | None:
    """Every loss check of a set that changes the maths: deviation, bound, the reference's
    sensitivity the bound came from, and the mark."""
    rows = [{"workload": e["workload"], "world size": e["world_size"],
             "series": c["series"], "knob set": c["knob_set"],
             "deviation": f"{c['excess'] * 100:.3g}%" if c["excess"] is not None else "",
             "bound": f"{c['bound'] * 100:.3g}%" if c["bound"] is not None else "",
             "single's sensitivity": (f"{c['sensitivity'] * 100:.3g}% ({c['probe']})"
                                      if c.get("sensitivity") is not None else "not recorded"),
             "samples/s": sps(c["samples_per_s"]), "mark": mark(c)}
            for e in entries for c in e["checks"] if c["changes"]]
    if not rows:
        return None
    return Table("Loss checks", pd.DataFrame(rows),
                 "Each setting that changes the averaged numbers: its mean loss over the "
                 "last half of the steps against single's on the same batches (deviation, "
                 "relative), the bound it was held to (the larger of the set's floor and a "
                 "multiple of single's own sensitivity: the largest per-step loss change one "
                 "rounding of its gradients to the probe dtype makes; docs/methodology.md), "
                 "and the mark. A setting beyond its bound keeps its throughput, marked, "
                 "and is never crowned.")


def _v(j: dict[str, Any] | None) -> str:
    if j is None:
        return "not measured"
    return f"{j['text']}" if "text" in j else f"{r3(j['ratio'])} [{r3(j['lo'])}-{r3(j['hi'])}]"


def section(entries: list[dict[str, Any]]) -> Section | None:
    if not entries:
        return None
    rows = [{"run": e["run"], "workload": e["workload"], "world size": e["world_size"],
             "at defaults": _v(e["at_defaults"]), "each at its best": _v(e["at_best"]),
             "best horovod": (f"{e['best_horovod']['knob_set']} ({e['best_horovod']['settings']}"
                              f"; {sps(e['best_horovod']['samples_per_s'])}/s)"
                              if e["best_horovod"] else ""),
             "best ddp": (f"{e['best_ddp']['knob_set']} ({e['best_ddp']['settings']}"
                          f"; {sps(e['best_ddp']['samples_per_s'])}/s)" if e["best_ddp"] else ""),
             "gain horovod": _v(e["gain_horovod"]), "gain ddp": _v(e["gain_ddp"])}
            for e in entries]
    maths = [_maths_line(e, c) for e in entries for c in e["checks"] if c["changes"]]
    table = Table("Each at its best", pd.DataFrame(rows),
                  "At defaults: both libraries' default knob set. Each at its best: the "
                  "fastest knob set of each library (same model, data, seed and "
                  "hyperparameters). Gain: tuned / default of the same library. Intervals "
                  "and verdicts as in 'Horovod vs DDP'. Settings that change the averaged "
                  "numbers are crowned only when their losses stay within the set's "
                  "stated bound of single's (older results: within "
                  f"{LOOSE_TOLERANCE * 100:g}% of their library's default cell). The fastest "
                  "of several sets is picked after measuring, which favours a lucky one: "
                  "an inconclusive gain is no gain.")
    habits = [f"{e['workload']} at {e['world_size']} ranks, {h['series']}: {h['text']}"
              for e in entries for h in e["habits"]]
    losses = loss_table(entries)
    return Section("Each at its best", [table, Notes(
        ["Settings that change the averaged numbers, each against its loss bound:"] + maths
        if maths else ["No setting that changes the averaged numbers was measured."]), Notes(
        ["Host habits, each against its library's default (never crowned):"] + habits
        if habits else ["No host habit measured."]), *([losses] if losses else [])])


if __name__ == "__main__":
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    d = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    print(json.dumps(at_best(d, verdicts.DEFAULT_MARGIN), indent=1, default=str))

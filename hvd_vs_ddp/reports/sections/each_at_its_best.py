"""Section "Each at its best": each library at its fastest knob set (hvd_vs_ddp/reports/
tuning.py); only for runs with per-library knob sets."""
from __future__ import annotations

from hvd_vs_ddp.reports import tuning
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section
from hvd_vs_ddp.run_model import tuning_pairs


def build(ctx: ReportContext) -> Section | None:
    return tuning.section(tuning_pairs.at_best(ctx.data, ctx.margin))

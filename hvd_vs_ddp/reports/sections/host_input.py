"""Section on the host's input pipeline (hvd_vs_ddp/reports/input_section.py); only for runs
with --input jpeg."""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.input_section import input_section
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return input_section(ctx.data, ctx.cmp, ctx.figs, ctx.margin)

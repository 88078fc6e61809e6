"""Section "Budget": what `run --budget` did with each pair
(hvd_vs_ddp/reports/budget_section.py)."""
from __future__ import annotations

from hvd_vs_ddp.reports import budget_section
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return budget_section.section(ctx.runs)

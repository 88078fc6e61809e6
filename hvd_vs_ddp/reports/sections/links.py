"""Section "Across a link" (hvd_vs_ddp/reports/links_section.py); only for runs with cells
across emulated hosts (run --emulate-hosts 2 --link-rate, the links preset)."""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.links_section import links_section
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return links_section(ctx.data, ctx.cmp, ctx.exposed, ctx.margin, ctx.figs)

"""Section on compiled training (hvd_vs_ddp/reports/compiled_section.py); only for runs
with a compiling knob set."""
from __future__ import annotations

from hvd_vs_ddp.reports.compiled_section import compiled_section
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return compiled_section(ctx.data, ctx.cmp, ctx.margin)

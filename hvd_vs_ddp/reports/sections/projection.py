"""Section "Projection": the runs' projection.json (hvd_vs_ddp/reports/projection_section.py),
apart from every measured figure; only for runs that have one."""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.projection_section import projection_section
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return projection_section([(r.name, r.path) for r in ctx.runs])

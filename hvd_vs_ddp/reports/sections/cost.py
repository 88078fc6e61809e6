"""Section "Cost": device-hours (and their price with report --price-per-device-hour) and
energy per sample (hvd_vs_ddp/reports/cost.py); only when there is something to price."""
from __future__ import annotations

from hvd_vs_ddp.reports import cost
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return None if ctx.cost.empty else Section("Cost", [cost.cost_table(ctx.cost)])

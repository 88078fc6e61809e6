"""Section "Communication": exposed communication (the subtraction), the collectives'
bandwidth table and figures."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Block, Section
from hvd_vs_ddp.reports.sections.throughput import figure


def build(ctx: ReportContext) -> Section:
    data = ctx.data
    comm: list[Block] = [tables.exposed_table(ctx.exposed)] if not ctx.exposed.empty else []
    comm += figure(ctx, "exposed_comm")
    if not data.collective.empty:
        comm.append(tables.collectives_table(data.collective, data.memcpy))
    return Section("Communication", comm + figure(ctx, "busbw"))

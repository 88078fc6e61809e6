"""Section "Horovod vs DDP": the comparison table, one row per case and world size
(hvd_vs_ddp.run_model.pairs.hvd_vs_ddp, hvd_vs_ddp.reports.tables.comparison_table)."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section:
    return Section("Horovod vs DDP", [tables.comparison_table(ctx.cmp, ctx.margin)]
                   if not ctx.cmp.empty else ["No case was measured with both a Horovod and "
                                              "a DDP backend at the same world size."])

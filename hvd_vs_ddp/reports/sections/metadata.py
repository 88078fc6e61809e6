"""Section "Metadata": the runs, their knob sets and their cells."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section:
    data = ctx.data
    return Section("Metadata", [tables.run_meta_table(data), tables.knob_table(data),
                                tables.cell_meta_table(data)])

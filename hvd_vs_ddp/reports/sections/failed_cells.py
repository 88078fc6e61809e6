"""Section "Failed cells": every cell that did not pass; only when there is one."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    cells = ctx.data.cells
    if cells.empty or not (cells["status"] != "passed").any():
        return None
    return Section("Failed cells", [tables.failed_table(cells)])

"""Section "Convergence": losses against the single-process reference, the loss figure
and time to accuracy."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Block, Section
from hvd_vs_ddp.reports.sections.throughput import figure


def build(ctx: ReportContext) -> Section:
    data = ctx.data
    conv: list[Block] = [tables.convergence_table(data.convergence)] \
        if not data.convergence.empty else []
    conv += figure(ctx, "loss")
    conv += [tables.tta_table(data.tta)] if not data.tta.empty else [
        "No time-to-accuracy results."]
    return Section("Convergence", conv)

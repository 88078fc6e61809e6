"""Section "Utilisation and memory": memory held per rank, DataParallel's GPUs and the
monitor's figures."""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.memory_table import dp_gpu_table, memory_table
from hvd_vs_ddp.reports.render import Block, Section
from hvd_vs_ddp.reports.sections.throughput import figure


def build(ctx: ReportContext) -> Section:
    mon = ctx.figs.group("monitor")
    held: list[Block] = [t for t in (memory_table(ctx.tp), dp_gpu_table(ctx.tp)) if t is not None]
    return Section("Utilisation and memory", held + ([mon] if mon else figure(ctx, "monitor")))

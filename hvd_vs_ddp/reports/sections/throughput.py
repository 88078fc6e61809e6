"""Section "Throughput and scaling": the throughput table and its two figures."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Block, Section


def figure(ctx: ReportContext, name: str) -> list[Block]:
    """The figure called name (or its one-line omission note) as blocks, or none."""
    f = ctx.figs.get(name)
    return [] if f is None else [f]


def build(ctx: ReportContext) -> Section:
    tp = ctx.tp
    return Section("Throughput and scaling", (
        [tables.throughput_table(tp)] if not tp.empty else ["No throughput results."])
        + figure(ctx, "throughput") + figure(ctx, "scaling_efficiency"))

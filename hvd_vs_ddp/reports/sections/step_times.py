"""Section "Step times": tails (percentiles, first step), stragglers and the step-time
figure (hvd_vs_ddp/reports/tails.py)."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables, tails
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Block, Notes, Section
from hvd_vs_ddp.reports.sections.throughput import figure


def build(ctx: ReportContext) -> Section:
    tp = ctx.tp
    steps: list[Block] = []
    if not tp.empty:
        st = tails.stragglers(tp)
        steps += [tables.tails_table(tails.tails(tp))]
        steps += [tables.straggler_table(st), Notes(tails.straggler_notes(st) or [
            "No rank was the slowest in most steps beyond chance (p < 0.01)."])] \
            if not st.empty else []
    return Section("Step times", steps + figure(ctx, "step_times"))

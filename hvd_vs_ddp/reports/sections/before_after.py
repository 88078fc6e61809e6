"""Section "Before / after": the second run against the first (B / A); only with exactly
two runs (with more, the Notes section says why there is none)."""
from __future__ import annotations

from hvd_vs_ddp.reports import tables
from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Block, Notes, Section

NEEDS_TWO = "Before/after comparison needs exactly two run directories."


def build(ctx: ReportContext) -> Section | None:
    ba = ctx.before_after
    if len(ctx.runs) != 2 or ba is None:
        return None
    a, b = ctx.runs[0].name, ctx.runs[1].name
    blocks: list[Block] = [tables.before_after_table(ba, a, b)] if not ba.empty else [
        "No throughput cell matches between the two runs."]
    notes = ctx.before_after_notes
    return Section("Before / after", blocks + ([Notes(notes)] if notes else []))

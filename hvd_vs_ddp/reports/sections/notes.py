"""Section "Notes": what loading and drawing left to say, and how the numbers are made."""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.sections.before_after import NEEDS_TWO


def build(ctx: ReportContext) -> Section:
    extra = [NEEDS_TWO] if ctx.multi and len(ctx.runs) != 2 else []
    return Section("Notes", [Notes(ctx.data.notes + extra + ctx.figs.notes + [
        "Throughput = global batch / step time, each step timed on every rank and "
        "represented by the slowest rank; medians over timed steps after warm-up.",
        "Verdicts come from 95% two-level bootstrap intervals of ratios of medians "
        "(repetitions, then steps; 2000 resamples, fixed seed) with a practical margin of "
        f"±{ctx.margin * 100:g}% (report --margin): 'faster' beyond it, 'equivalent' inside "
        "it, else 'inconclusive'. With one repetition an interval is within-run only and "
        "a verdict is indicative. At 1 rank nothing is communicated: the ratio is "
        "framework overhead, not a win."])])

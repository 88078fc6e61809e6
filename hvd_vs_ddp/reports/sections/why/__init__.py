"""Section "Where the step goes", one package: steps.py (the three views of the step: the
subtraction, each library's own account; stragglers, layout), profiler.py (the profiler's
ruler), figure.py (the figure), section.py (the tables and closing notes).

    from hvd_vs_ddp.reports.sections import why
    section = why.build(ctx)         # None when no cell has anything to say
    python -m hvd_vs_ddp.reports.sections.why.steps RUN_DIR    # prints the three tables
"""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section
from hvd_vs_ddp.reports.sections.why.section import why_section


def build(ctx: ReportContext) -> Section | None:
    return why_section(ctx.data, ctx.figs, ctx.multi)

"""Section on recovery from a killed worker (hvd_vs_ddp/reports/recovery_section.py),
judged once in the context (its headlines and verdicts.json part come from the same
judgement); only for runs with recovery trials."""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section


def build(ctx: ReportContext) -> Section | None:
    return ctx.recovery.section

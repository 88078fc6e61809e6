"""The report's sections, in the one order they appear: each is a module (or package)
here with one entry, `build(ctx) -> Section | None` (None: nothing to show), over the
report's one context (hvd_vs_ddp/reports/context.py), computed once before any section.

To add a section: write a module here with `build(ctx)` and put it in ORDER where it
should appear. Nothing else places sections (no search for titles).

    from hvd_vs_ddp.reports.sections import build_sections
    sections = build_sections(ctx)       # [render.Section, ...] in ORDER, Nones left out
"""
from __future__ import annotations

from hvd_vs_ddp.reports.context import ReportContext
from hvd_vs_ddp.reports.render import Section
from hvd_vs_ddp.reports.sections import (
    before_after,
    budget,
    communication,
    compiled,
    convergence,
    cost,
    each_at_its_best,
    failed_cells,
    horovod_vs_ddp,
    host_input,
    links,
    metadata,
    notes,
    projection,
    recovery,
    step_times,
    throughput,
    utilisation,
    variance,
    why,
)

ORDER = (
    horovod_vs_ddp,     # the answer's table first
    budget,             # runs with --budget: each pair's repetitions
    each_at_its_best,   # runs with per-library knob sets
    compiled,           # runs with a compiling knob set
    throughput,
    cost,               # with a price or measured energy
    host_input,         # runs with --input jpeg
    step_times,
    communication,
    links,              # runs across emulated hosts: step and bytes against the link rate
    why,                # where the step goes (package)
    convergence,
    recovery,           # recovery trials
    utilisation,
    before_after,       # exactly two runs
    failed_cells,
    variance,           # runs with 2+ repetitions: between vs step to step
    metadata,
    notes,
    projection,         # last: apart from every measured figure
)


def build_sections(ctx: ReportContext) -> list[Section]:
    """Every section that has something to show, in ORDER."""
    built = (module.build(ctx) for module in ORDER)
    return [s for s in built if s is not None]

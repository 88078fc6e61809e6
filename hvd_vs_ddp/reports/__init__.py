"""reports: hvd-vs-ddp run directories -> one self-contained HTML report + Markdown.

Reads only manifest.json and cells/*.json (docs/results-format.md); never imports
torch and never writes into a run directory. The HTML carries its CSS and its
figures (base64 PNG) inline and has no external URL; the Markdown is written beside
it with the same stem and references its figures as PNG files in <stem>_figures/.

    from hvd_vs_ddp.reports import build_report, ReportError
    paths = build_report([Path("runs/2026-11-22")], Path("report.html"))
    python -m reports RUN_DIR [RUN_DIR_B] -o report.html    # two dirs: before/after too

Modules: load (read + validate), frames (tidy tables, repetitions pooled), stats
(median, IQR, two-level bootstrap interval of a ratio), verdicts (margin, wording),
answer (one answer per case and world size, verdicts.json), tails (percentiles,
first step, stragglers), compare (ratios, scaling, exposed comm, headlines), tables,
theme (backend colours), figures + figures_comm (seaborn), render (HTML/Markdown),
context (everything the sections read, computed once), sections/ (one module or package
per section, each with `build(ctx)`, in the one ORDER of sections/__init__.py),
build (build_report: settings, context, sections, atomic writes).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hvd_vs_ddp.reports.errors import ReportError

if TYPE_CHECKING:
    from hvd_vs_ddp.reports.build import ReportPaths

__all__ = ["ReportError", "ReportPaths", "build_report"]


def build_report(run_dirs: list[Path], out: Path, margin: float = 0.05,
                 keep_disturbed: bool = False, price_per_device_hour: float | None = None,
                 epoch_samples: int = 1_281_167) -> "ReportPaths":
    """Read run_dirs (never modified); write out (.html), its .md, <stem>_figures/*.png and
    verdicts.json. Raises ReportError (a ValueError with a one-line message) on bad input,
    a bad margin (0 < margin < 1), price, epoch size or output path."""
    from hvd_vs_ddp.reports.build import (
        build_report as build,  # lazy: `python -m reports.x` stays clean
    )
    return build(run_dirs, out, margin, keep_disturbed, price_per_device_hour, epoch_samples)


def __getattr__(name: str):
    if name == "ReportPaths":
        from hvd_vs_ddp.reports.build import ReportPaths
        return ReportPaths
    raise AttributeError(f"module 'reports' has no attribute {name!r}")

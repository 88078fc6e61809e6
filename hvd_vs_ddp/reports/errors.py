"""The one error a report raises: bad inputs or a refused output path.

`ReportError` is `results.ResultsError`: a ValueError and a hvd_vs_ddp.common.errors.InputError
whose message is one line a user can act on (what was wrong, what was expected,
what to do). The results loader and everything in hvd_vs_ddp/reports/ raise it (never a bare
KeyError or json.JSONDecodeError), so both readers give the same one-line messages
and `python -m reports` and the CLI print the line and exit 2.

    from hvd_vs_ddp.reports.errors import ReportError
"""
from __future__ import annotations

from hvd_vs_ddp.results_schema.errors import ResultsError

ReportError = ResultsError  # one class: a bad results file and a bad report request alike

__all__ = ["ReportError"]

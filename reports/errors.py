"""The one error a report raises: bad inputs or a refused output path.

`ReportError` is a ValueError whose message is one line a user can act on: what was
wrong, what was expected, what to do. Everything in reports/ raises it (never a bare
KeyError or json.JSONDecodeError) so that `python -m reports` and the CLI can print
the line and exit non-zero.

    from reports.errors import ReportError
"""
from __future__ import annotations

from common.errors import InputError


class ReportError(InputError, ValueError):
    """A report cannot be built; str(err) is one line saying why and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))  # always exactly one line

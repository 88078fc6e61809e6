"""The errors of the results format: a file that is not what the format says, and a
file that could not be written.

`ResultsError` is an `InputError` (hvd_vs_ddp/common/errors.py: the CLI prints it as one line,
`hvd-vs-ddp: error: ...`, and exits 2) and a `ValueError`. Its message is always one
line that names the file and the field, what was wrong and what was expected:

    raise ResultsError("runs/x/cells/a.json: benchmark 'test_x' (kind throughput): "
                       "step_times[3] is nan; expected a finite number.")

`UnknownKind` is the ResultsError of a benchmark kind this reader does not know; a
report catches it to skip that benchmark with a note (newer writers may add kinds).

`WriteError` (defined in hvd_vs_ddp/common/errors.py, re-exported here) is not bad input
but a failed write (a full disk): an OSError whose one line says "writing PATH: No space
left on device"; hvd_vs_ddp/common/outputs.py raises it after removing its temporary
file, and the CLI prints it as one line (exit 74).
"""
from __future__ import annotations

from hvd_vs_ddp.common.errors import InputError, WriteError

__all__ = ["ResultsError", "UnknownKind", "WriteError"]


class ResultsError(InputError, ValueError):
    """A results file or record is invalid; str(err) is one line naming file and field."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))  # always exactly one line


class UnknownKind(ResultsError):
    """extra_info.kind names no registered record kind."""

    def __init__(self, message: str, kind: object) -> None:
        super().__init__(message)
        self.kind = kind

"""One error policy for the whole project.

- `InputError`: the user gave something we cannot use (an unknown name, a bad number,
  a corrupt results file, a launcher that does not fit). The CLI prints its message as
  one line, `hvd-vs-ddp: error: ...`, and exits with `EXIT_BAD_INPUT` (2). Its message
  says what was wrong, what was expected and what to do.
- `UnknownName`: an `InputError` for a lookup by name (backends, workloads, knob sets,
  presets, launchers); the message lists the known names.
- "Can this run here?" is not an error: backends answer with an `Availability`
  (hvd_vs_ddp/common/availability.py).

Exit statuses of the `hvd-vs-ddp` command (also in its --help and the README):
0 done; 1 `run`: some cells failed; 2 (`EXIT_BAD_INPUT`) bad input, one line, nothing
written; 3 (`EXIT_PARTIAL_REPORT`) `report` wrote its report but some passed cells'
results files were unreadable (each listed in it, and one warning line each on
stderr); 74 (`EXIT_WRITE_FAILED`, sysexits' EX_IOERR) a file could not be written (a
full disk): one line naming the file, the previous file left as it was.

    raise UnknownName("backend", "ddp-foo", ["single", "ddp-gloo"])
"""
from __future__ import annotations

from typing import Iterable

EXIT_BAD_INPUT = 2
EXIT_PARTIAL_REPORT = 3
EXIT_WRITE_FAILED = 74


def one_line(text: object) -> str:
    """`text` as one line: every character that would break it (newlines, and what
    str.splitlines also breaks at: \\v, \\f, \\x1c-\\x1e, \\x85, \\u2028, \\u2029)
    is written as its escape, so a message quoting a user's odd value stays one line."""
    s = str(text).rstrip("\n")
    if len(s.splitlines()) <= 1 and "\r" not in s:
        return s
    return "".join(repr(c)[1:-1] if (c + "x").splitlines()[0] != c + "x" else c for c in s)


class InputError(Exception):
    """Bad input the user can fix; shown as one line, exit code 2."""


class InvalidValue(InputError, ValueError):
    """A value a check refused (a dataclass's __post_init__, a plan's check) that may
    have come from the user: one line, exit 2 at the CLI like every InputError, and
    still a ValueError for code that catches those."""


class UnknownName(InputError, KeyError):
    """A name that is not in a registry; says which names are known."""

    def __init__(self, what: str, name: object, known: Iterable[str]) -> None:
        self.what, self.name, self.known = what, name, list(known)
        super().__init__(f"unknown {what} {name!r}; known {what}s: {', '.join(self.known)}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class WriteError(OSError):
    """Writing a file failed (a full disk, no permission...); str(err) is one line,
    "writing PATH: REASON". It keeps the OSError's errno, so `err.errno == errno.ENOSPC`
    still tells a full disk. (hvd_vs_ddp/common/outputs.py raises it; the results format
    re-exports it.)"""

    def __init__(self, path: object, err: OSError) -> None:
        super().__init__(err.errno, err.strerror or str(err), str(path))
        self.path = path

    def __str__(self) -> str:
        return f"writing {self.path}: {self.strerror}"

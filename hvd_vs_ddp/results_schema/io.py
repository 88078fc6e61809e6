"""Reading and writing the JSON files of a run directory, safely.

- `read_json(path, expected)`: the parsed JSON, or a `ResultsError` that says which
  bad case the file is: unreadable, empty, truncated, not UTF-8, not JSON.
- `write_json_atomic(path, data, kind=...)`: writes a temporary file in the same
  directory, fsyncs it and renames it over `path` (`os.replace`), so a reader sees the
  old file or the new one, never half of one; the temporary file is removed on any
  failure.
- `write_files_atomic({Output: bytes, ...})`: the same for a set of files that belong
  together (a report's HTML, Markdown, figures, verdicts.json): every temporary file
  is written and fsynced first, and only then are they renamed into place, so a write
  that fails (a full disk) or is interrupted replaces none of the old files.

Both are the output gate of hvd_vs_ddp/common/outputs.py: every output names its kind
(and the inputs it is made from), and a path that would replace anything but its own
earlier self (a run's manifest, a cell's results, a report of other runs, a file nobody
recognises) is refused with one line (OutputRefused, exit 2) before anything is written.
A write that fails raises `WriteError` (an OSError) whose one line names the file and
the cause, e.g. "writing runs/x/manifest.json: No space left on device"; the old file is
untouched and no temporary file is left behind. (Data that cannot be serialised is a
programming error: its TypeError/ValueError is raised before any file is opened.)

    from hvd_vs_ddp.results_schema.io import read_json, write_json_atomic
    write_json_atomic(Path("runs/x/manifest.json"), manifest.to_dict(), kind=RUN_MANIFEST,
                      owner=Path("runs/x"))
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from hvd_vs_ddp.common import outputs
from hvd_vs_ddp.common.outputs import Output
from hvd_vs_ddp.results_schema.errors import ResultsError


def read_json(path: Path, expected: str, fix: str = "Re-run the cell.") -> Any:
    """Parse one JSON file or raise a ResultsError that says which of the bad cases it is
    (`fix`: what to do about an empty or truncated one)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ResultsError(f"{path}: cannot read ({err.strerror}); expected {expected}.") from None
    if not raw.strip():
        raise ResultsError(f"{path}: empty file; expected {expected}. "
                           + ("Re-run the cell (the run was probably interrupted)."
                              if fix == "Re-run the cell." else fix))
    try:
        text = raw.decode("utf-8")
        return json.loads(text)
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not JSON (not UTF-8 text); expected {expected}.") from None
    except json.JSONDecodeError as err:
        # the text ended inside a value: cut off (a string left open runs to the end)
        if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            raise ResultsError(f"{path}: truncated JSON (ends after {len(raw)} bytes); "
                               f"expected {expected}. {fix}") from None
        raise ResultsError(f"{path}: not JSON (line {err.lineno} column {err.colno}: "
                           f"{err.msg}); expected {expected}.") from None


def write_files_atomic(files: Mapping[Output, bytes], owner: Path | None = None) -> None:
    """Write several files so that none of them is replaced unless all could be written,
    after the output gate has allowed every one (hvd_vs_ddp/common/outputs.py)."""
    outputs.write_files(files, owner)


def write_json_atomic(path: Path, data: Any, indent: int | None = 1, *, kind: str,
                      inputs: tuple[str, ...] = (), owner: Path | None = None) -> None:
    """Write data as JSON to path atomically (temp file + fsync + os.replace), through
    the output gate: `kind` is what the file is (its `format`), `inputs` what it is made
    from, `owner` the run directory writing its own files."""
    outputs.write_json(Output(Path(path), kind, inputs), data, indent, owner)

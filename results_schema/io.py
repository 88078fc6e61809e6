"""Reading and writing the JSON files of a run directory, safely.

- `read_json(path, expected)`: the parsed JSON, or a `ResultsError` that says which
  bad case the file is: unreadable, empty, truncated, not UTF-8, not JSON.
- `write_json_atomic(path, data)`: writes a temporary file in the same directory,
  fsyncs it and renames it over `path` (`os.replace`), so a reader sees the old file
  or the new one, never half of one; the temporary file is removed on any failure.

    from results_schema.io import read_json, write_json_atomic
    write_json_atomic(Path("runs/x/manifest.json"), manifest.to_dict())
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from results_schema.errors import ResultsError


def read_json(path: Path, expected: str) -> Any:
    """Parse one JSON file or raise a ResultsError that says which of the bad cases it is."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ResultsError(f"{path}: cannot read ({err.strerror}); expected {expected}.") from None
    if not raw.strip():
        raise ResultsError(f"{path}: empty file; expected {expected}. "
                           "Re-run the cell (the run was probably interrupted).")
    try:
        text = raw.decode("utf-8")
        return json.loads(text)
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not JSON (not UTF-8 text); expected {expected}.") from None
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()):
            raise ResultsError(f"{path}: truncated JSON (ends after {len(raw)} bytes); "
                               f"expected {expected}. Re-run the cell.") from None
        raise ResultsError(f"{path}: not JSON (line {err.lineno} column {err.colno}: "
                           f"{err.msg}); expected {expected}.") from None


def write_json_atomic(path: Path, data: Any, indent: int | None = 1) -> None:
    """Write data as JSON to path atomically (temp file + fsync + os.replace)."""
    path = Path(path)
    # A name of our own (not mkstemp) so that the file gets the usual umask permissions.
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise

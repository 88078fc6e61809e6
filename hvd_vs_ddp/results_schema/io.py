"""Reading and writing the JSON files of a run directory, safely.

- `read_json(path, expected)`: the parsed JSON, or a `ResultsError` that says which
  bad case the file is: unreadable, empty, truncated, not UTF-8, not JSON.
- `write_json_atomic(path, data)`: writes a temporary file in the same directory,
  fsyncs it and renames it over `path` (`os.replace`), so a reader sees the old file
  or the new one, never half of one; the temporary file is removed on any failure.
- `write_files_atomic({path: bytes, ...})`: the same for a set of files that belong
  together (a report's HTML, Markdown, figures, verdicts.json): every temporary file
  is written and fsynced first, and only then are they renamed into place, so a write
  that fails (a full disk) or is interrupted replaces none of the old files.

A write that fails raises `WriteError` (an OSError, hvd_vs_ddp/results_schema/errors.py) whose one
line names the file and the cause, e.g. "writing runs/x/manifest.json: No space left
on device"; the old file is untouched and no temporary file is left behind. (Data that
cannot be serialised is a programming error: its TypeError/ValueError is raised before
any file is opened.)

    from hvd_vs_ddp.results_schema.io import read_json, write_json_atomic
    write_json_atomic(Path("runs/x/manifest.json"), manifest.to_dict())
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hvd_vs_ddp.common import interrupt
from hvd_vs_ddp.results_schema.errors import ResultsError, WriteError


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
        # the text ended inside a value: cut off (a string left open runs to the end)
        if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            raise ResultsError(f"{path}: truncated JSON (ends after {len(raw)} bytes); "
                               f"expected {expected}. Re-run the cell.") from None
        raise ResultsError(f"{path}: not JSON (line {err.lineno} column {err.colno}: "
                           f"{err.msg}); expected {expected}.") from None


def _tmp_name(path: Path) -> Path:
    # A name of our own (not mkstemp) so that the file gets the usual umask permissions.
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def _write_tmp(path: Path, data: bytes) -> Path:
    """Write and fsync the temporary sibling of path; remove it again on any failure."""
    tmp = _tmp_name(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException as err:
        _remove(tmp)
        if isinstance(err, OSError):
            raise WriteError(path, err) from None
        raise
    return tmp


def _remove(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def write_files_atomic(files: dict[Path, bytes]) -> None:
    """Write several files so that none of them is replaced unless all could be written:
    every temporary file first (a failure removes them all and raises WriteError), then
    one os.replace each."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in files.items():
            staged.append((_write_tmp(Path(path), data), Path(path)))
        with interrupt.deferred():  # SIGINT/SIGTERM/SIGHUP cannot split the renames
            for tmp, path in staged:
                try:
                    os.replace(tmp, path)
                except OSError as err:
                    raise WriteError(path, err) from None
    finally:
        for tmp, _ in staged:
            _remove(tmp)  # only those not renamed yet (after a failure) are still there


def write_json_atomic(path: Path, data: Any, indent: int | None = 1) -> None:
    """Write data as JSON to path atomically (temp file + fsync + os.replace)."""
    text = json.dumps(data, indent=indent)  # a TypeError here opens no file
    write_files_atomic({Path(path): text.encode("utf-8")})

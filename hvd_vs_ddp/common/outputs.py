"""Outputs never overwrite inputs: the one gate every file hvd-vs-ddp writes goes through.

Every writer (run's manifest, report's HTML, Markdown, figures and verdicts.json,
project's projection.json, a recovery trial's plan.json and trial.json, and whatever
comes next) names what it writes as an
`Output(path, kind, inputs)` and writes through `write_files` / `write_json`. Before a
single byte is written, `check` refuses (one `OutputRefused` line: an InputError, exit 2)
an output that would replace anything but its own earlier self:

1. a path that is a directory, or whose nearest existing folder is a file or cannot be
   written;
2. a path inside a run directory (a folder whose manifest.json is a run's manifest),
   unless the writer is that run itself (`owner`: the runner and its cells, for the
   manifest, cells/ and logs/), or it is `projection.json` at the top of the run, holding a
   projection of that same run;
3. an existing file that is not of the same kind (a run's manifest, a cell's results, a
   Horovod timeline, a profiler trace, a report, verdicts.json, a projection, a figure):
   the kind is read from the file itself (`identify`, hvd_vs_ddp/common/output_formats.py:
   the kinds and their markers), by the marker every kind carries (the JSON `format`
   field; an HTML comment in reports, after the HTML's doctype and on the Markdown's last
   line; a PNG text chunk in figures; Chrome-trace structure for traces), so a file
   nobody can recognise is never replaced;
4. an existing file of the same kind made from other inputs (a report of other runs, a
   projection of another run): the inputs a file was made from are recorded in its
   marker (`inputs`: resolved run directories) and must match.

`write_files` checks every output first, then writes each to a temporary sibling
(fsync) and renames them into place together, so an interruption or a full disk
replaces none of them (WriteError: "writing PATH: No space left on device", exit 74). It
also checks that each file's bytes carry its own marker, so whatever it writes it can
recognise, and replace, later, and returns each file's `Digest` (size and sha256,
hvd_vs_ddp/common/digests.py).

    from hvd_vs_ddp.common import output_formats, outputs
    out = outputs.Output(Path("r/projection.json"), output_formats.PROJECTION, ("/abs/runs/r",))
    outputs.write_json(out, {"format": output_formats.PROJECTION, "inputs": [...], ...})
    python -m hvd_vs_ddp.common.outputs FILE...     # what hvd-vs-ddp takes each file for
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from hvd_vs_ddp.common import interrupt, run_layout
from hvd_vs_ddp.common.digests import Digest, digest_bytes
from hvd_vs_ddp.common.errors import InputError, WriteError
from hvd_vs_ddp.common.output_formats import (
    CELL_LOG,
    PROJECTION,
    RUN_MANIFEST,
    RUN_OWNED,
    WHAT,
    Mark,
    identify,
    identify_bytes,
)

NAME_MAX = 255  # bytes in one file name (Linux, macOS)


class OutputRefused(InputError):
    """An output that would replace a file it does not own; one line, exit 2."""


@dataclass(frozen=True)
class Output:
    """A file to write: where, what kind, and the inputs it is made from (resolved
    paths; () when its kind needs none, e.g. a run's own files)."""
    path: Path
    kind: str
    inputs: tuple[str, ...] = ()


# -- the rules -------------------------------------------------------------------
def enclosing_run(path: Path) -> Path | None:
    """The run directory `path` lies in (itself included), by its manifest's marker."""
    path = Path(path).expanduser().resolve()
    for folder in (path, *path.parents):
        manifest = folder / run_layout.MANIFEST
        if manifest.is_file():
            mark = identify(manifest)
            if mark is not None and mark.kind == RUN_MANIFEST:
                return folder
    return None


def _refuse(out: Output, why: str) -> OutputRefused:
    return OutputRefused(f"{out.path}: {why}")


def _describe(mark: Mark) -> str:
    return WHAT.get(mark.kind, f"a file of kind {mark.kind!r}")


def _own_place(out: Output, path: Path, run: Path, owner: Path | None) -> bool:
    """Whether a writer may put `out` at `path` inside run directory `run`."""
    if owner is not None and Path(owner).expanduser().resolve() == run:
        where = RUN_OWNED.get(out.kind, ())
        rel = path.relative_to(run).parts
        return bool(rel) and (rel[0] in where if rel[0] != run_layout.MANIFEST
                              else run_layout.MANIFEST in where and len(rel) == 1)
    return out.kind == PROJECTION and path == run / run_layout.PROJECTION and \
        out.inputs == (str(run),)


def check_name(path: Path) -> None:
    """OutputRefused if a component of `path` is longer than the file system allows (255
    bytes on Linux): the write would fail only at the end."""
    for part in Path(path).parts:
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise OutputRefused(f"{path}: the name {part[:24]!r}... is "
                                f"{len(part.encode('utf-8', 'surrogateescape'))} bytes long; "
                                f"a file name may have at most {NAME_MAX}")


def cannot_make_folders_in(folder: Path) -> str | None:
    """Why no folder can be made in `folder` (a probe made and removed at once), or None.
    os.access lets root through everywhere; /proc, sysfs and the like still refuse."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".hvd-vs-ddp-probe-", dir=folder))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_one(out: Output, owner: Path | None = None) -> None:
    """OutputRefused if writing `out` could replace anything but its own earlier self."""
    given = Path(out.path).expanduser()
    check_name(given)
    if given.is_dir():
        raise _refuse(out, "is a directory; name a file")
    path = given.resolve()
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise _refuse(out, f"{folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _refuse(out, f"cannot write in folder {folder} (permission denied)")
    why = cannot_make_folders_in(folder)
    if why:
        raise _refuse(out, f"cannot write in folder {folder} ({why})")
    run = enclosing_run(path)
    if run is not None and not _own_place(out, path, run, owner):
        what = WHAT.get(out.kind, "this output")
        if out.kind == PROJECTION and path == run / run_layout.PROJECTION:
            raise _refuse(out, f"is the projection file of run {run}; it may hold only a "
                               f"projection of that run, not of {', '.join(out.inputs)}")
        raise _refuse(out, f"lies inside the run directory {run} (its manifest, cells/ and "
                           f"logs/ belong to the run); write {what} elsewhere")
    if not (given.exists() or given.is_symlink()):
        return
    if out.kind == CELL_LOG and run is not None and given.is_file():
        return  # a run's own logs/ (owner checked above): a log carries no marker
    mark = identify(given)
    if mark is None:
        raise _refuse(out, "exists and is not a file hvd-vs-ddp wrote; writing "
                           f"{WHAT.get(out.kind, 'the output')} there would destroy it: "
                           "choose another path or move it away")
    if mark.kind != out.kind:
        raise _refuse(out, f"exists and is {_describe(mark)}, not "
                           f"{WHAT.get(out.kind, out.kind)}; choose another path")
    if not out.inputs or mark.inputs == out.inputs:
        return
    if mark.inputs is None:
        if run is not None and out.kind == PROJECTION:
            return  # the run's own projection.json from before inputs were recorded
        raise _refuse(out, f"exists and is {_describe(mark)} from an earlier hvd-vs-ddp that "
                           "did not record its inputs; move it away or choose another path")
    raise _refuse(out, f"exists and is {_describe(mark)} of {', '.join(mark.inputs) or '?'}"
                       f", not of {', '.join(out.inputs)}; choose another path")


def check(outs: Iterable[Output], owner: Path | None = None) -> None:
    for out in outs:
        check_one(out, owner)


# -- writing ---------------------------------------------------------------------
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


def _carries_its_marker(out: Output, data: bytes) -> None:
    mark = identify_bytes(data)
    if mark is None or mark.kind != out.kind or (out.inputs and mark.inputs != out.inputs):
        raise ValueError(f"{out.path}: the data written as {out.kind} does not carry its "
                         f"marker (found {mark}); a writer's bug")


def write_files(files: Mapping[Output, bytes], owner: Path | None = None
                ) -> dict[Path, Digest]:
    """Check every output, then write them so that none is replaced unless all could be:
    every temporary file first (a failure removes them all and raises WriteError), then
    one os.replace each. Returns each path's Digest (what was written)."""
    check(files, owner)
    for out, data in files.items():
        _carries_its_marker(out, data)
    staged: list[tuple[Path, Path]] = []
    try:
        for out, data in files.items():
            path = Path(out.path)
            staged.append((_write_tmp(path, data), path))
        with interrupt.deferred():  # SIGINT/SIGTERM/SIGHUP cannot split the renames
            for tmp, path in staged:
                try:
                    os.replace(tmp, path)
                except OSError as err:
                    raise WriteError(path, err) from None
    finally:
        for tmp, _ in staged:
            _remove(tmp)  # only those not renamed yet (after a failure) are still there
    return {Path(out.path): digest_bytes(data) for out, data in files.items()}


def write_json(out: Output, data: Any, indent: int | None = 1,
               owner: Path | None = None) -> Digest:
    """`data` as JSON to out.path through write_files (temp file + fsync + os.replace);
    the Digest of what was written."""
    text = json.dumps(data, indent=indent)  # a TypeError here opens no file
    return write_files({out: text.encode("utf-8")}, owner)[Path(out.path)]


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        if not Path(arg).exists():
            print(f"{arg}: no such file")
            continue
        m = identify(Path(arg))
        run = enclosing_run(Path(arg))
        print(f"{arg}: {_describe(m) if m else 'not a file hvd-vs-ddp wrote'}"
              f"{' (inputs: ' + ', '.join(m.inputs) + ')' if m and m.inputs else ''}"
              f"{'; inside run ' + str(run) if run else ''}")

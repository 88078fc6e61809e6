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
   the kind is read from the file itself (`identify`), by the marker every kind carries
   (the JSON `format` field; an HTML comment in reports, after the HTML's doctype and
   on the Markdown's last line; a PNG text chunk in figures;
   Chrome-trace structure for traces), so a file nobody can recognise is never replaced;
4. an existing file of the same kind made from other inputs (a report of other runs, a
   projection of another run): the inputs a file was made from are recorded in its
   marker (`inputs`: resolved run directories) and must match.

`write_files` checks every output first, then writes each to a temporary sibling
(fsync) and renames them into place together, so an interruption or a full disk
replaces none of them (WriteError: "writing PATH: No space left on device", exit 74). It
also checks that each file's bytes carry its own marker, so whatever it writes it can
recognise, and replace, later, and returns each file's `Digest` (size and sha256).

Digests: `digest(path)` is the size and sha256 of a file as it is now; a run records
one for every file a cell wrote (its results, timeline, traces, log) in its manifest
(hvd_vs_ddp/results_schema/integrity.py), and `Digest.differs(now)` says in a few words
how a file's present state departs from the recorded one (missing, truncated, larger,
changed), so what a file is vouched for is judged by one rule everywhere.

    from hvd_vs_ddp.common import outputs
    out = outputs.Output(Path("r/projection.json"), outputs.PROJECTION, ("/abs/runs/r",))
    outputs.write_json(out, {"format": outputs.PROJECTION, "inputs": [...], ...})
    python -m hvd_vs_ddp.common.outputs FILE...     # what hvd-vs-ddp takes each file for
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from hvd_vs_ddp.common import interrupt, run_layout
from hvd_vs_ddp.common.errors import InputError, WriteError

RUN_MANIFEST = "hvd-vs-ddp/run"          # the results format's name (results_schema)
CELL_RESULTS = "hvd-vs-ddp/results"      # a cell's pytest-benchmark JSON
CELL_LOG = "hvd-vs-ddp/cell-log"         # a cell's log (logs/)
PROJECTION = "hvd-vs-ddp/projection"
VERDICTS = "hvd-vs-ddp/verdicts"
REPORT_HTML = "hvd-vs-ddp/report-html"
REPORT_MD = "hvd-vs-ddp/report-md"
FIGURE = "hvd-vs-ddp/figure"
HOROVOD_TIMELINE = "horovod-timeline"
PROFILER_TRACE = "torch-profiler-trace"
RECOVERY_PLAN = "hvd-vs-ddp/recovery-plan"    # a recovery trial's plan.json (its folder's
RECOVERY_TRIAL = "hvd-vs-ddp/recovery-trial"  # marker) and trial.json: hvd_vs_ddp/recovery/
CELL_PLAN = "hvd-vs-ddp/cell-plan"            # a cell's plan (hvd_vs_ddp/harness/cell_plan.py)
WHAT = {RUN_MANIFEST: "a run's manifest", CELL_RESULTS: "a cell's results",
        CELL_LOG: "a cell's log", PROJECTION: "a projection", VERDICTS: "a report's "
        "verdicts.json", REPORT_HTML: "an HTML report", REPORT_MD: "a Markdown report",
        FIGURE: "a report's figure", HOROVOD_TIMELINE: "a Horovod timeline",
        PROFILER_TRACE: "a profiler trace", RECOVERY_PLAN: "a recovery trial's plan",
        RECOVERY_TRIAL: "a recovery trial's outcome", CELL_PLAN: "a cell's plan"}
# what a run writes inside its own directory, and where (hvd_vs_ddp/common/run_layout.py)
_M, _C, _L = run_layout.MANIFEST, run_layout.CELLS, run_layout.LOGS
RUN_OWNED = {RUN_MANIFEST: (_M,), CELL_RESULTS: (_C,), HOROVOD_TIMELINE: (_C,),
             PROFILER_TRACE: (_C,), CELL_LOG: (_L,), "horovod-autotune-log": (_C,),
             RECOVERY_PLAN: (_C,), RECOVERY_TRIAL: (_C,), CELL_PLAN: (_C,)}
TAG = "hvd-vs-ddp-output"  # the marker in text files (an HTML comment) and PNG text chunks
_TEXT_MARK = re.compile(r"<!-- " + TAG + r" (\{.*?\}) -->")
_OLD_REPORT = "<title>Horovod or DDP? Benchmark report</title>"  # before markers (2026-11)
_PNG = b"\x89PNG\r\n\x1a\n"
HEAD = 1 << 16
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


@dataclass(frozen=True)
class Mark:
    """What an existing file is: its kind and, where recorded, its inputs."""
    kind: str
    inputs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Digest:
    """What a file held when it was written: its size in bytes and its sha256 (hex)."""
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"size": self.size, "sha256": self.sha256}

    def differs(self, now: "Digest | None") -> str | None:
        """How `now` (None: no such file) departs from this record, or None if it does
        not: 'missing', 'truncated (N of M bytes)', 'larger than written (N, not M
        bytes)', 'changed since it was written (same size, other sha256)'."""
        if now is None:
            return f"missing (written with {self.size:,} bytes)"
        if now.size < self.size:
            return f"truncated ({now.size:,} of {self.size:,} bytes)"
        if now.size > self.size:
            return f"larger than written ({now.size:,}, not {self.size:,} bytes)"
        if now.sha256 != self.sha256:
            return "changed since it was written (same size, other sha256)"
        return None


def digest_bytes(data: bytes) -> Digest:
    return Digest(len(data), hashlib.sha256(data).hexdigest())


def digest(path: Path) -> Digest | None:
    """The size and sha256 of the file at `path` now; None if there is no such file (a
    directory or anything else unreadable counts as none)."""
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    except OSError:  # absent, a directory, unreadable
        return None
    return Digest(size, h.hexdigest())


# -- markers -------------------------------------------------------------------
def text_marker(kind: str, inputs: Iterable[str] = ()) -> str:
    """The line an HTML or Markdown output carries (an HTML comment: invisible)."""
    return f"<!-- {TAG} {json.dumps({'kind': kind, 'inputs': list(inputs)})} -->"


def png_metadata(kind: str, inputs: Iterable[str] = ()) -> dict[str, str]:
    """matplotlib's savefig(metadata=...) entry that marks a figure."""
    return {TAG: json.dumps({"kind": kind, "inputs": list(inputs)})}


def identify(path: Path) -> Mark | None:
    """What `path` is, by its own marker; None for a file hvd-vs-ddp cannot recognise."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
            data = head + fh.read() if head.startswith(_PNG) or len(head) < HEAD or \
                path.stat().st_size < 256 * 2**20 else head
    except OSError:
        return None
    return identify_bytes(data)


def identify_bytes(data: bytes) -> Mark | None:
    if data.startswith(_PNG):
        return _png_mark(data)
    text = data[:HEAD].decode("utf-8", errors="replace")
    found = _TEXT_MARK.search(text) or _TEXT_MARK.search(  # Markdown: the last line
        data[-4096:].decode("utf-8", errors="replace"))
    if found:
        return _mark(found.group(1))
    if _OLD_REPORT in text:
        return Mark(REPORT_HTML, None)
    start = text.lstrip()[:1]
    if start == "{":
        return _json_mark(data, text)
    if start == "[" and '"ph"' in text:  # Horovod's timeline: a Chrome trace array
        return Mark(HOROVOD_TIMELINE)
    return None


def _mark(blob: str) -> Mark | None:
    try:
        doc = json.loads(blob)
        inputs = doc.get("inputs")
        return Mark(str(doc["kind"]), None if inputs is None else tuple(map(str, inputs)))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _json_mark(data: bytes, head: str) -> Mark | None:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict):  # unreadable JSON: what its first bytes say
        if re.match(r'\s*\{\s*"format"\s*:\s*"' + RUN_MANIFEST + '"', head):
            return Mark(RUN_MANIFEST)
        if '"machine_info"' in head and '"hvd_vs_ddp"' in head:
            return Mark(CELL_RESULTS)
        return None
    fmt = doc.get("format")
    if isinstance(fmt, str) and fmt.startswith("hvd-vs-ddp/"):
        inputs = doc.get("inputs")
        return Mark(fmt, tuple(map(str, inputs)) if isinstance(inputs, list) else None)
    info = doc.get("machine_info")
    if isinstance(info, dict) and isinstance(info.get("hvd_vs_ddp"), dict):
        return Mark(CELL_RESULTS)
    if "traceEvents" in doc:
        return Mark(PROFILER_TRACE)
    return None


def _png_mark(data: bytes) -> Mark | None:
    at = len(_PNG)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key.decode("latin-1") == TAG:
                return _mark(value.decode("latin-1"))
        if kind in (b"IDAT", b"IEND"):
            break
        at += 12 + length
    return None


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

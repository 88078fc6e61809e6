"""What each file hvd-vs-ddp writes is, and how it is recognised: the formats table.

Every output has a kind (`RUN_MANIFEST`, `CELL_RESULTS`, ..., `CELL_PLAN`), said in
words by `WHAT`; `RUN_OWNED` says what a run writes inside its own directory, and
where. Each kind carries a marker in its own bytes: the JSON `format` field; an HTML
comment (`text_marker`) in reports, after the HTML's doctype and on the Markdown's last
line; a PNG text chunk in figures (`png_metadata`); Chrome-trace structure for traces.
`identify` reads a file's marker back (its kind and, where recorded, the inputs it was
made from), so a file nobody can recognise is never replaced by the output gate
(hvd_vs_ddp/common/outputs.py).

    from hvd_vs_ddp.common import output_formats
    output_formats.identify(Path("runs/r/manifest.json"))   # Mark(kind='hvd-vs-ddp/run')
    python -m hvd_vs_ddp.common.outputs FILE...    # what hvd-vs-ddp takes each file for
"""
from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from hvd_vs_ddp.common import run_layout

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


@dataclass(frozen=True)
class Mark:
    """What an existing file is: its kind and, where recorded, its inputs."""
    kind: str
    inputs: tuple[str, ...] | None = None



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


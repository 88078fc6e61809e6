"""Read and validate a run directory: manifest.json and the cells/*.json it names.

Only reads; never writes, renames or deletes anything under the run directory. Every
problem becomes one ReportError line naming the file, what was wrong and what to do.
Cells whose status is failed/timeout/pending are kept (for the "Failed cells" section)
but their results files are not read: a dead run may have left them half-written.

    from reports.load import load_run
    run = load_run(Path("runs/2026-11-22"))   # Run(path, name, manifest, cells)
    python -m reports.load RUN_DIR            # prints a one-line summary per cell
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports.errors import ReportError

FORMAT = "hvd-vs-ddp/run"
FORMAT_VERSION = 1
STATUSES = ("passed", "failed", "timeout", "pending")
# kind -> extra_info fields the report needs. world_size and launcher, when absent, come
# from machine_info.hvd_vs_ddp (then the manifest cell); memcpy needs no backend.
REQUIRED = {
    "throughput": ("backend", "workload", "knobs", "per_rank_batch", "global_batch",
                   "step_times", "samples_per_s"),
    "compute_only": ("backend", "workload", "knobs", "per_rank_batch", "step_times"),
    "convergence": ("backend", "workload", "losses", "reference_losses", "max_rel_dev",
                    "tolerance", "within_tolerance"),
    "time_to_accuracy": ("backend", "workload", "target", "reached", "seconds", "steps"),
    "collective": ("backend", "op", "sizes"),
    "memcpy": ("bytes", "bandwidth_gbps"),
}
SIZE_FIELDS = ("bytes", "times", "busbw_gbps", "correct")  # each entry of collective sizes
_NONEMPTY = ("step_times", "samples_per_s", "losses", "sizes")


@dataclass
class Benchmark:
    """One pytest-benchmark entry: its name, kind and extra_info."""
    name: str
    kind: str
    info: dict[str, Any]


@dataclass
class Cell:
    """One manifest cell; benchmarks are loaded only when status is 'passed'."""
    entry: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=dict)  # machine_info.hvd_vs_ddp
    benchmarks: list[Benchmark] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.entry["id"])

    @property
    def status(self) -> str:
        return str(self.entry["status"])


@dataclass
class Run:
    path: Path
    name: str
    manifest: dict[str, Any]
    cells: list[Cell]
    notes: list[str] = field(default_factory=list)


def read_json(path: Path, expected: str) -> Any:
    """Parse one JSON file or raise a ReportError that says which of the bad cases it is."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ReportError(f"{path}: cannot read ({err.strerror}); expected {expected}.")
    if not raw.strip():
        raise ReportError(f"{path}: empty file; expected {expected}. "
                          "Re-run the cell (the run was probably interrupted).")
    try:
        text = raw.decode("utf-8")
        return json.loads(text)
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not JSON (not UTF-8 text); expected {expected}.")
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()):
            raise ReportError(f"{path}: truncated JSON (ends after {len(raw)} bytes); "
                              f"expected {expected}. Re-run the cell.")
        raise ReportError(f"{path}: not JSON (line {err.lineno} column {err.colno}: "
                          f"{err.msg}); expected {expected}.")


def _check_version(path: Path, version: Any, where: str) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ReportError(f"{path}: {where} must be a positive integer, got {version!r}.")
    if version > FORMAT_VERSION:
        raise ReportError(f"{path}: {where} {version} is newer than this report reads "
                          f"({FORMAT_VERSION}); upgrade hvd-vs-ddp to read it.")


def load_manifest(run_dir: Path) -> dict[str, Any]:
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir}: not a directory; expected a run directory "
                          "written by `hvd-vs-ddp run`.")
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise ReportError(f"{run_dir}: no manifest.json; expected a run directory written "
                          "by `hvd-vs-ddp run` (pass the directory that holds manifest.json).")
    what = f"a {FORMAT} manifest"
    man = read_json(path, what)
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        got = man.get("format") if isinstance(man, dict) else type(man).__name__
        raise ReportError(f"{path}: not a hvd-vs-ddp run manifest (format={got!r}, "
                          f"expected {FORMAT!r}).")
    _check_version(path, man.get("format_version"), "format_version")
    cells = man.get("cells")
    if not isinstance(cells, list):
        raise ReportError(f"{path}: 'cells' must be a list of cells, got {type(cells).__name__}.")
    for i, c in enumerate(cells):
        missing = [k for k in ("id", "status", "backend", "world_size") if not
                   (isinstance(c, dict) and k in c)]
        if missing:
            raise ReportError(f"{path}: cells[{i}] lacks {', '.join(missing)}.")
        if c["status"] not in STATUSES:
            raise ReportError(f"{path}: cell {c['id']!r} has status {c['status']!r}; "
                              f"expected one of {', '.join(STATUSES)}.")
    return man


def _results_path(run_dir: Path, rel: Any, cell_id: str) -> Path:
    if not isinstance(rel, str) or not rel:
        raise ReportError(f"{run_dir / 'manifest.json'}: passed cell {cell_id!r} names no "
                          "results file.")
    path = (run_dir / rel).resolve()
    if not path.is_relative_to(run_dir.resolve()):
        raise ReportError(f"{run_dir / 'manifest.json'}: cell {cell_id!r} results {rel!r} "
                          "lies outside the run directory.")
    if not path.is_file():
        raise ReportError(f"{path}: missing; the manifest says cell {cell_id!r} passed. "
                          "Re-run the cell or mark it failed.")
    return path


def _check_benchmark(path: Path, bench: Any, i: int, fallback: dict) -> Benchmark | None:
    name = bench.get("name", f"benchmarks[{i}]") if isinstance(bench, dict) else f"[{i}]"
    info = bench.get("extra_info") if isinstance(bench, dict) else None
    if not isinstance(info, dict) or "kind" not in info:
        raise ReportError(f"{path}: benchmark {name!r} has no extra_info.kind; "
                          "expected results of the hvd-vs-ddp suites.")
    kind = info["kind"]
    if kind not in REQUIRED:
        return None  # a kind this reader does not know: skipped with a note
    info = {**{k: v for k, v in fallback.items() if v is not None}, **info}
    missing = [k for k in ("world_size", "launcher") + REQUIRED[kind] if k not in info]
    if missing:
        raise ReportError(f"{path}: benchmark {name!r} (kind {kind}) lacks "
                          f"{', '.join(missing)} in extra_info.")
    for key in _NONEMPTY:
        if key in REQUIRED[kind] and (not isinstance(info[key], list) or not info[key]):
            raise ReportError(f"{path}: benchmark {name!r} (kind {kind}) has no {key} "
                              "values; expected a non-empty list.")
    for j, size in enumerate(info.get("sizes") or []):
        gone = [k for k in SIZE_FIELDS if not isinstance(size, dict) or k not in size]
        if gone:
            raise ReportError(f"{path}: benchmark {name!r} sizes[{j}] lacks {', '.join(gone)}.")
    return Benchmark(str(name), kind, info)


def load_cell_results(path: Path, cell: Cell, notes: list[str]) -> None:
    doc = read_json(path, "pytest-benchmark JSON from the hvd-vs-ddp suites")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ReportError(f"{path}: JSON of another tool (no 'benchmarks' list); expected "
                          "pytest-benchmark JSON from the hvd-vs-ddp suites.")
    machine = (doc.get("machine_info") or {}).get("hvd_vs_ddp")
    if not isinstance(machine, dict):
        raise ReportError(f"{path}: pytest-benchmark JSON without machine_info.hvd_vs_ddp; "
                          "it was not written by the hvd-vs-ddp suites.")
    _check_version(path, machine.get("format_version"), "machine_info.hvd_vs_ddp.format_version")
    cell.machine = machine
    fallback = {"world_size": machine.get("world_size", cell.entry.get("world_size")),
                "launcher": machine.get("launcher", cell.entry.get("launcher"))}
    for i, bench in enumerate(doc["benchmarks"]):
        b = _check_benchmark(path, bench, i, fallback)
        if b is None:
            notes.append(f"{cell.id}: skipped benchmark of unknown kind "
                         f"{bench['extra_info']['kind']!r}.")
        else:
            cell.benchmarks.append(b)


def load_run(run_dir: Path, name: str | None = None) -> Run:
    run_dir = Path(run_dir)
    man = load_manifest(run_dir)
    run = Run(run_dir, name or run_dir.resolve().name, man, [])
    for entry in man["cells"]:
        cell = Cell(dict(entry))
        if cell.status == "passed":
            load_cell_results(_results_path(run_dir, entry.get("results"), cell.id),
                              cell, run.notes)
        run.cells.append(cell)
    return run


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        r = load_run(Path(arg))
        for c in r.cells:
            print(f"{r.name}  {c.id:50s} {c.status:8s} {len(c.benchmarks)} benchmark(s)")

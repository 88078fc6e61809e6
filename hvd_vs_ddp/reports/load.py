"""Read a run directory for a report: manifest.json and the cells/*.json it names.

All reading, checking and version-1 upgrading is done by the results package
(hvd_vs_ddp/results_schema/files.py); this module keeps the report's view of it: a Run of Cells of
Benchmarks, each carrying its typed record and, for the tables, its JSON dict.
Only reads; never writes, renames or deletes anything under the run directory.
Cells whose status is failed/timeout/interrupted/pending are kept (for the "Failed
cells" section) but their results files are not read: a dead run may have left them
half-written. A "running" cell is refused: the run is still going, or its runner was
killed outright; `hvd-vs-ddp run --resume` finishes it first.
A passed cell whose results file cannot be used (missing, empty, truncated, not JSON,
failing validation, a newer format) does not stop the report: the cell becomes
"unreadable", with the loader's one-line reason (file and field) in `Cell.unreadable`,
and none of its benchmarks is used; `Run.unreadable` lists those cells.
A passed cell run N times (`run --repeat N`) has every repetition's file read; each
Benchmark carries its repetition number `rep` (1 when the cell ran once).

    from hvd_vs_ddp.reports.load import load_run
    run = load_run(Path("runs/2026-11-22"))   # Run(path, name, manifest, cells)
    python -m hvd_vs_ddp.reports.load RUN_DIR            # prints a one-line summary per cell
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hvd_vs_ddp import results_schema as results
from hvd_vs_ddp.reports.errors import ReportError
from hvd_vs_ddp.results_schema import BenchmarkRecord, CellEntry, Manifest, read_json  # noqa: F401 (API)
from hvd_vs_ddp.results_schema.version import FORMAT, FORMAT_VERSION  # noqa: F401 (API)

REPORTED = ("passed", "failed", "timeout", "interrupted", "pending")  # not "running"
UNREADABLE = "unreadable"  # the report's status of a passed cell whose results it cannot use


@dataclass
class Benchmark:
    """One pytest-benchmark entry: its name, kind, extra_info (upgraded) and record."""
    name: str
    kind: str
    info: dict[str, Any]
    record: BenchmarkRecord | None = None
    rep: int = 1


@dataclass
class Cell:
    """One manifest cell; benchmarks are loaded only when status is 'passed'."""
    entry: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=dict)  # machine_info.hvd_vs_ddp
    benchmarks: list[Benchmark] = field(default_factory=list)
    record: CellEntry | None = None
    unreadable: str | None = None  # why its results could not be used (passed cells only)

    @property
    def id(self) -> str:
        return str(self.entry["id"])

    @property
    def status(self) -> str:
        return UNREADABLE if self.unreadable else str(self.entry["status"])

    @property
    def error(self) -> str:
        return self.unreadable or str(self.entry.get("error") or "")


@dataclass
class Run:
    path: Path
    name: str
    manifest: dict[str, Any]
    cells: list[Cell]
    notes: list[str] = field(default_factory=list)
    record: Manifest | None = None

    @property
    def unreadable(self) -> list[Cell]:
        return [c for c in self.cells if c.unreadable]


def load_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest as a (version-2) dict; see results.load_manifest for the record."""
    return results.load_manifest(Path(run_dir))[0].to_dict()


def _as_cell(entry: CellEntry, rel: str | None) -> CellEntry:
    """The entry with `results` = one repetition's file (results_path checks it)."""
    return dataclasses.replace(entry, results=rel, repeats=None)


def _load_passed(run_dir: Path, entry: CellEntry, cell: Cell) -> list[str]:
    """Read every repetition's results file of a passed cell into `cell`; its notes.
    Raises ResultsError (naming the file and field) if any one cannot be used."""
    notes: list[str] = []
    # a run without repetitions: the cell's own file is its one repetition
    files = [r.results for r in entry.repeats] if entry.repeats else [entry.results]
    for k, rel in enumerate(files, start=1):
        res = results.load_cell_results(
            results.results_path(run_dir, _as_cell(entry, rel)), entry)
        if k == 1:
            cell.machine = res.machine.to_dict()
        cell.benchmarks += [Benchmark(b.name, b.record.KIND, b.record.to_dict(),
                                      b.record, k) for b in res.benchmarks]
        notes += [f"{cell.id}: {n}" for n in res.skipped + res.notes]
    return notes


def load_run(run_dir: Path, name: str | None = None) -> Run:
    """The run; a passed cell whose results cannot be used is kept as "unreadable"
    (Cell.unreadable says why). Raises ResultsError when the manifest itself cannot be
    used or a cell is still "running"."""
    run_dir = Path(run_dir)
    man, notes = results.load_manifest(run_dir)
    run = Run(run_dir, name or run_dir.resolve().name, man.to_dict(), [], list(notes), man)
    for entry in man.cells:
        if entry.status not in REPORTED:
            raise ReportError(f"{run_dir / 'manifest.json'}: cell {entry.id!r} has status "
                              f"{entry.status!r}: the run is still going, or its runner was "
                              f"killed; let it finish or `hvd-vs-ddp run --resume {run_dir}`, "
                              f"then report (a report reads cells that are "
                              f"{', '.join(REPORTED)}).")
        cell = Cell(entry.to_dict(), record=entry)
        if entry.status == "passed":
            try:
                run.notes += _load_passed(run_dir, entry, cell)
            except ReportError as err:
                cell.machine, cell.benchmarks, cell.unreadable = {}, [], str(err)
        run.cells.append(cell)
    return run

if __name__ == "__main__":
    for arg in sys.argv[1:]:
        r = load_run(Path(arg))
        for c in r.cells:
            reps = max((b.rep for b in c.benchmarks), default=0)
            print(f"{r.name}  {c.id:50s} {c.status:8s} {len(c.benchmarks)} benchmark(s), "
                  f"{reps} repetition(s){'  ' + c.unreadable if c.unreadable else ''}")

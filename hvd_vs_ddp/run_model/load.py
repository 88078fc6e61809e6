"""Read a run directory into typed objects: a Run of Cells of Benchmarks, each a record.

All reading, checking and version-1 upgrading is done by the results format
(hvd_vs_ddp/results_schema/files.py); this module only assembles what it returns: the
manifest as a `Manifest`, every cell as its `CellEntry` with the `MachineInfo` of its
results, every benchmark as its typed record (ThroughputRecord, ConvergenceRecord, ...).
There are no dictionaries beside the records: whoever needs a field reads the record.
Only reads; never writes, renames or deletes anything under the run directory.

Cells whose status is failed/timeout/interrupted/pending are kept (the report's "Failed
cells" section) but their results files are not read: a dead run may have left them
half-written. A "running" cell is refused: the run is still going, or its runner was
killed outright; `hvd-vs-ddp run --resume` finishes it first.
A passed cell whose results file cannot be used (missing, empty, truncated, not JSON,
failing validation, a newer format) does not stop the reading: the cell becomes
"unreadable", with the loader's one-line reason (file and field) in `Cell.unreadable`,
and none of its benchmarks is used; `Run.unreadable` lists those cells.
Before anything of a passed cell is read, its files are checked against the sizes and
sha256 digests the run recorded when they were written, by the one verifier that
`run --resume` uses too (hvd_vs_ddp/results_schema/integrity.py): a cell with a file
missing, truncated, corrupt or different (its results, timeline, traces, log) is
"unreadable", its note naming the file and what is wrong, so nothing of it is reported
as passed. A run recorded before digests is checked by reading its results, and says so
in the run's notes.
A passed cell run N times (`run --repeat N`) has every repetition's file read; each
Benchmark carries its repetition number `rep` (1 when the cell ran once).
A run directory the reader cannot use at all (no manifest.json, a manifest without
cells, a cells/ folder that is gone, a cells/ folder without any passed cell's results
file) is one ResultsError naming what is missing.

    from hvd_vs_ddp.run_model.load import load_run
    run = load_run(Path("runs/2026-11-22"))
    [b.record.samples_per_s_median for b in run.benchmarks(ThroughputRecord)]
    python -m hvd_vs_ddp.run_model.load RUN_DIR      # one line per cell
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, TypeVar

from hvd_vs_ddp import results_schema as results
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.results_schema import BenchmarkRecord, CellEntry, MachineInfo, Manifest, integrity
from hvd_vs_ddp.results_schema.errors import ResultsError

REPORTED = ("passed", "failed", "timeout", "interrupted", "pending")  # not "running"
UNREADABLE = "unreadable"  # the status of a passed cell whose results cannot be used

R = TypeVar("R", bound=BenchmarkRecord)


@dataclass
class Benchmark:
    """One pytest-benchmark entry: its name, its typed record, its repetition."""
    name: str
    record: BenchmarkRecord
    rep: int = 1

    @property
    def kind(self) -> str:
        return self.record.KIND


@dataclass
class Cell:
    """One manifest cell; its benchmarks are read only when it passed."""
    entry: CellEntry
    machine: MachineInfo | None = None
    benchmarks: list[Benchmark] = field(default_factory=list)
    unreadable: str | None = None  # why its results could not be used (passed cells only)

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def status(self) -> str:
        return UNREADABLE if self.unreadable else self.entry.status

    @property
    def error(self) -> str:
        return self.unreadable or self.entry.error or ""


@dataclass
class Run:
    path: Path
    name: str
    manifest: Manifest
    cells: list[Cell]
    notes: list[str] = field(default_factory=list)
    # what run_model.disturbed.load_judged_run left out or kept as disturbed (also in notes)
    disturbed_notes: list[str] = field(default_factory=list)

    @property
    def unreadable(self) -> list[Cell]:
        return [c for c in self.cells if c.unreadable]

    @property
    def hardware(self) -> dict[str, Any]:
        return dict(self.manifest.hardware or {})

    @property
    def cores(self) -> int:
        """The host's cores as the run recorded them (1 when it did not)."""
        try:
            return max(1, int(self.hardware.get("cores") or 1))
        except (TypeError, ValueError):
            return 1

    @property
    def gpus(self) -> int:
        gpus = self.hardware.get("gpus")
        return len(gpus) if isinstance(gpus, list) else int(bool(gpus))

    def benchmarks(self, kind: type[R] | None = None) -> Iterator[Benchmark]:
        """Every benchmark of every readable cell, of one record class if given."""
        for cell in self.cells:
            for b in cell.benchmarks:
                if kind is None or isinstance(b.record, kind):
                    yield b

    def records(self, kind: type[R]) -> list[R]:
        """The records of one kind, e.g. run.records(ThroughputRecord)."""
        return [b.record for b in self.benchmarks(kind)]  # type: ignore[misc]


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
            cell.machine = res.machine
        cell.benchmarks += [Benchmark(b.name, b.record, k) for b in res.benchmarks]
        notes += [f"{cell.id}: {n}" for n in res.skipped + res.notes]
    return notes


def _check_usable(run_dir: Path, man: Manifest) -> None:
    """One line when the directory is incomplete in a way nobody can report."""
    run = RunFolder(run_dir)
    where = run.manifest
    if not man.cells:
        raise ResultsError(f"{where}: the manifest lists no cells; nothing was run in "
                           f"{run_dir} (start a run with `hvd-vs-ddp run`)")
    passed = [c for c in man.cells if c.status == "passed"]
    if passed and not run.cells.is_dir():
        raise ResultsError(f"{run_dir}: the cells/ folder is missing, but the manifest "
                           f"has {len(passed)} passed cell(s) whose results it held; "
                           "restore it or run again")
    files = {c.id: [r.results for r in c.repeats] if c.repeats else [c.results]
             for c in passed}
    gone = [c.id for c in passed if not any(rel and (run_dir / rel).is_file()
                                            for rel in files[c.id])]
    if passed and len(gone) == len(passed):
        first = next((rel for rel in files[gone[0]] if rel),
                     run.relative(run.results(gone[0])))
        raise ResultsError(f"{run_dir}: none of the results files of the manifest's "
                           f"{len(passed)} passed cell(s) is there (e.g. {first}); "
                           "restore cells/ or run again")


def load_run(run_dir: Path, name: str | None = None) -> Run:
    """The run; a passed cell whose results cannot be used is kept as "unreadable"
    (Cell.unreadable says why). Raises ResultsError when the manifest itself cannot be
    used, the directory lacks what every report needs, or a cell is still "running"."""
    run_dir = Path(run_dir)
    man, notes = results.load_manifest(run_dir)
    for entry in man.cells:
        if entry.status not in REPORTED:
            raise ResultsError(f"{RunFolder(run_dir).manifest}: cell {entry.id!r} has status "
                               f"{entry.status!r}: the run is still going, or its runner "
                               f"was killed; let it finish or `hvd-vs-ddp run --resume "
                               f"{run_dir}`, then report (a report reads cells that are "
                               f"{', '.join(REPORTED)}).")
    _check_usable(run_dir, man)
    run = Run(run_dir, name or run_dir.resolve().name, man, [], list(notes))
    if integrity.legacy(man):
        run.notes.append(f"{run.name}: {integrity.LEGACY_NOTE}.")
    for entry in man.cells:
        cell = Cell(entry)
        if entry.status == "passed":
            damage = integrity.check_cell(run_dir, entry)
            if damage:  # not what the run wrote: nothing of it is read
                cell.unreadable = "; ".join(f"{run_dir / d.path}: {d.why}" for d in damage)
                run.cells.append(cell)
                continue
            try:
                run.notes += _load_passed(run_dir, entry, cell)
            except ResultsError as err:
                cell.machine, cell.benchmarks, cell.unreadable = None, [], str(err)
        run.cells.append(cell)
    return run


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        r = load_run(Path(arg))
        for c in r.cells:
            reps = max((b.rep for b in c.benchmarks), default=0)
            print(f"{r.name}  {c.id:50s} {c.status:8s} {len(c.benchmarks)} benchmark(s), "
                  f"{reps} repetition(s){'  ' + c.unreadable if c.unreadable else ''}")

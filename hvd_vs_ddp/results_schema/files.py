"""Read a run directory through the format: manifest.json and the cells' JSON files.

Each file is read (results.io), checked for its format and version (a newer version
is refused), upgraded in memory when it is version 1 (results.upgrade) and turned into
typed records; every problem is one ResultsError line naming the file and the field.
Only reads: never writes, renames or deletes anything.

    man, notes = load_manifest(Path("runs/x"))                  # Manifest
    res = load_cell_results(results_path(Path("runs/x"), man.cells[0]), man.cells[0])
    [(b.name, b.record.KIND) for b in res.benchmarks]
    python -m results.files RUN_DIR          # one line per cell: status, benchmark kinds
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.results_schema.errors import ResultsError, UnknownKind
from hvd_vs_ddp.results_schema.io import read_json
from hvd_vs_ddp.results_schema.kinds import BenchmarkRecord, record_from_dict
from hvd_vs_ddp.results_schema.machine import MachineInfo
from hvd_vs_ddp.results_schema.manifest import CellEntry, Manifest
from hvd_vs_ddp.results_schema.upgrade import upgrade_manifest, upgrade_results
from hvd_vs_ddp.results_schema.version import FORMAT, check_version

RESULTS_WHAT = "pytest-benchmark JSON from the hvd-vs-ddp suites"
EDITED = ("edited since the run wrote it (its content no longer matches its digest); its "
          "statuses and records are taken as they are, every file still checked against "
          "them")


@dataclass
class NamedRecord:
    """One pytest-benchmark entry: its name and its typed extra_info."""
    name: str
    record: BenchmarkRecord


@dataclass
class CellResults:
    path: Path
    machine: MachineInfo
    benchmarks: list[NamedRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # kinds this reader does not know
    notes: list[str] = field(default_factory=list)     # from the version-1 upgrade


def manifest_from_json(man: Any, path: Path) -> tuple[Manifest, list[str]]:
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        got = man.get("format") if isinstance(man, dict) else type(man).__name__
        raise ResultsError(f"{path}: not a hvd-vs-ddp run manifest (format={got!r}, "
                           f"expected {FORMAT!r}).")
    check_version(man.get("format_version"), str(path))
    man, notes = upgrade_manifest(man)
    manifest = Manifest.from_dict(man, str(path))
    if manifest.edited():
        notes.append(f"{path}: {EDITED}")
    return manifest, notes


def load_manifest(run_dir: Path) -> tuple[Manifest, list[str]]:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ResultsError(f"{run_dir}: not a directory; expected a run directory "
                           "written by `hvd-vs-ddp run`.")
    path = RunFolder(run_dir).manifest
    if not path.is_file():
        raise ResultsError(f"{run_dir}: no manifest.json; expected a run directory written "
                           "by `hvd-vs-ddp run` (pass the directory that holds manifest.json).")
    return manifest_from_json(read_json(
        path, f"a {FORMAT} manifest", "Restore it from a copy: without its manifest a run "
        "can be neither resumed nor reported (its cells/ and logs/ are kept)."), path)


def results_path(run_dir: Path, cell: CellEntry) -> Path:
    """The results file of a passed cell: named, inside the run directory, present."""
    run, rel = RunFolder(run_dir), cell.results
    if not rel:
        raise ResultsError(f"{run.manifest}: passed cell {cell.id!r} names no results file.")
    path = run.file(rel)
    if path is None:
        raise ResultsError(f"{run.manifest}: cell {cell.id!r} results {rel!r} lies outside "
                           "the run directory.")
    if not path.is_file():
        raise ResultsError(f"{path}: missing; the manifest says cell {cell.id!r} passed. "
                           "Re-run the cell or mark it failed.")
    return path


def results_from_json(doc: Any, path: Path, cell: CellEntry | None = None) -> CellResults:
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ResultsError(f"{path}: JSON of another tool (no 'benchmarks' list); expected "
                           f"{RESULTS_WHAT}.")
    info = doc.get("machine_info")
    machine = info.get("hvd_vs_ddp") if isinstance(info, dict) else None
    if not isinstance(machine, dict):
        raise ResultsError(f"{path}: pytest-benchmark JSON without machine_info.hvd_vs_ddp; "
                           "it was not written by the hvd-vs-ddp suites.")
    check_version(machine.get("format_version"), str(path),
                  "machine_info.hvd_vs_ddp.format_version")
    doc, notes = upgrade_results(doc, cell.launcher if cell else None)
    info = MachineInfo.from_dict(doc["machine_info"]["hvd_vs_ddp"],
                                 f"{path}: machine_info.hvd_vs_ddp")
    out = CellResults(path, info, notes=[f"{path.name}: {n}" for n in notes])
    fallback = {"world_size": info.world_size if info.world_size is not None
                else (cell.world_size if cell else None),
                "launcher": info.launcher if info.launcher is not None
                else (cell.launcher if cell else None)}
    fallback = {k: v for k, v in fallback.items() if v is not None}
    for i, bench in enumerate(doc["benchmarks"]):
        name = bench.get("name", f"#{i}") if isinstance(bench, dict) else f"#{i}"
        extra = bench.get("extra_info") if isinstance(bench, dict) else None
        where = f"{path}: benchmark {name!r}"
        if isinstance(extra, dict) and "kind" in extra:
            extra = {**fallback, **extra}
        try:
            out.benchmarks.append(NamedRecord(str(name), record_from_dict(extra, where)))
        except UnknownKind as err:
            out.skipped.append(f"skipped benchmark {name!r} of unknown kind {err.kind!r}.")
    return out


def load_cell_results(path: Path, cell: CellEntry | None = None) -> CellResults:
    return results_from_json(read_json(path, RESULTS_WHAT), Path(path), cell)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        man, _ = load_manifest(Path(arg))
        for c in man.cells:
            kinds = ""
            if c.status == "passed":
                res = load_cell_results(results_path(Path(arg), c), c)
                kinds = " ".join(sorted({b.record.KIND for b in res.benchmarks}))
            print(f"{c.id:50s} {c.status:8s} {kinds}")

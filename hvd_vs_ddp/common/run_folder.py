"""RunFolder: the one owner of a run directory's paths, with the output gate inside it.

Every path in a run folder (its manifest, cells/, logs/, a cell's results and log, a
compiling cell's cache, the damaged/ folder of a resume, the projection; the names in
hvd_vs_ddp/common/run_layout.py) is asked of a RunFolder, and every file the run writes
into it passes the output gate (hvd_vs_ddp/common/outputs.py) through it, as the run
that owns the folder: `check`, `write_json`, `write_files`. A rank that is given the
run folder (`--run-dir`) checks its own outputs with `check_output`.

    from hvd_vs_ddp.common.run_folder import RunFolder
    run = RunFolder(Path("runs/x"))
    run.manifest, run.results("ddp-gloo-torchrun-np2"), run.compile_cache(cell_id)
    run.write_json(run.manifest, output_formats.RUN_MANIFEST, doc)   # gated: its own files only
    python -m hvd_vs_ddp.common.run_folder RUN_DIR            # every path, and if a run
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from hvd_vs_ddp.common import outputs, run_layout
from hvd_vs_ddp.common.digests import Digest
from hvd_vs_ddp.common.outputs import Output


@dataclass(frozen=True)
class RunFolder:
    """A run directory (it need not exist yet): where each of its files lies."""
    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @classmethod
    def of_results(cls, results: Path) -> "RunFolder":
        """The run folder of a cell's results file (RUN_DIR/cells/<stem>.json)."""
        return cls(Path(results).resolve().parent.parent)

    @classmethod
    def enclosing(cls, path: Path) -> "RunFolder | None":
        """The run folder `path` lies in (itself included), by its manifest's marker."""
        found = outputs.enclosing_run(path)
        return None if found is None else cls(found)

    # -- where things are ------------------------------------------------------
    @property
    def manifest(self) -> Path:
        return self.root / run_layout.MANIFEST

    @property
    def cells(self) -> Path:
        return self.root / run_layout.CELLS

    @property
    def logs(self) -> Path:
        return self.root / run_layout.LOGS

    @property
    def projection(self) -> Path:
        return self.root / run_layout.PROJECTION

    def results(self, stem: str) -> Path:
        """A cell's (repetition's) results file; its other files are named from it."""
        return self.cells / f"{stem}.json"

    def log(self, stem: str) -> Path:
        return self.logs / f"{stem}.log"

    def plan(self, stem: str) -> Path:
        """A cell's (repetition's) plan, judged by the runner, read by its ranks
        (hvd_vs_ddp/harness/cell_plan.py); named from the results like the cell's other
        files, so that the run's integrity check records it with them."""
        return self.cells / f"{stem}.plan.json"

    def compile_cache(self, cell_id: str) -> Path:
        """A compiling cell's cache: cold in its first repetition, then warm."""
        return self.root / run_layout.COMPILE_CACHE / cell_id

    def damaged(self, stamp: str) -> Path:
        """Where a resume moves the files it found damaged (one folder per resume)."""
        return self.root / run_layout.DAMAGED / stamp

    def cell_folders(self) -> Iterator[Path]:
        """The folders cells write into (cells/, logs/), those that exist."""
        return (d for d in (self.cells, self.logs) if d.is_dir())

    def is_run(self) -> bool:
        """Whether the folder holds a manifest (read it with results_schema.load_manifest)."""
        return self.manifest.is_file()

    def file(self, rel: str) -> Path | None:
        """root/rel if it stays inside the run folder (no '..', not absolute), else None."""
        path = (self.root / rel).resolve()
        return path if path.is_relative_to(self.root.resolve()) and \
            not Path(rel).is_absolute() else None

    def relative(self, path: Path) -> str:
        """How the manifest names a file of the run: relative to the folder, posix."""
        return Path(path).relative_to(self.root).as_posix()

    # -- making it ---------------------------------------------------------------
    def make(self) -> bool:
        """Make the folder and its cells/ and logs/; True when the folder was new."""
        fresh = not self.root.exists()
        self.cells.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        return fresh

    def unmake(self) -> None:
        """Remove cells/, logs/ and the folder, each only if empty (a fresh run that
        could not write its first manifest leaves nothing behind)."""
        for d in (self.cells, self.logs, self.root):
            try:
                d.rmdir()
            except OSError:
                pass

    # -- the output gate, as this run ------------------------------------------------
    def check(self, *items: tuple[Path, str]) -> None:
        """OutputRefused unless each (path, kind) is this run's own file to (re)write."""
        outputs.check([Output(Path(p), kind) for p, kind in items], owner=self.root)

    def write_json(self, path: Path, kind: str, data: Any, indent: int | None = 1) -> Digest:
        """data as JSON at path (a file of this run), atomically, through the gate."""
        return outputs.write_json(Output(Path(path), kind), data, indent, owner=self.root)

    def write_files(self, files: Mapping[Output, bytes]) -> dict[Path, Digest]:
        return outputs.write_files(files, owner=self.root)


def check_output(path: Path, kind: str, run_dir: str | os.PathLike | None) -> None:
    """The gate for a cell's own output (a rank's results, timeline, trace, a recovery
    trial's files): OutputRefused unless `path` may be written as `kind`, inside a run
    folder only when `run_dir` is that run, the one the cell belongs to (--run-dir; None
    when pytest runs without `hvd-vs-ddp run`)."""
    if run_dir:
        RunFolder(Path(run_dir)).check((Path(path), kind))
    else:
        outputs.check_one(Output(Path(path), kind))


def write_output(path: Path, kind: str, data: Any,
                 run_dir: str | os.PathLike | None) -> Digest:
    """data as JSON at path through the gate, as `check_output` allows it."""
    if run_dir:
        return RunFolder(Path(run_dir)).write_json(Path(path), kind, data)
    return outputs.write_json(Output(Path(path), kind), data)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        run = RunFolder(Path(arg))
        print(f"{arg}: {'a run' if run.is_run() else 'not a run (no manifest)'}")
        for name in ("manifest", "cells", "logs", "projection"):
            print(f"    {name}: {getattr(run, name)}")
        print(f"    compile cache: {run.compile_cache('<cell>')}\n"
              f"    damaged: {run.damaged('<stamp>')}")

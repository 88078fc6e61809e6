"""Whether a run's files are still what the run wrote: the one verifier of a run directory.

A run records, for every repetition of every cell, the files that repetition wrote and
their size and sha256 (`files` in the manifest; hvd_vs_ddp/cli/runner.py calls `record`
once the cell's processes have ended, and the manifest goes through the output gate).
`check_rep` compares them with what is there now and returns one `Damage` per file that
is missing, truncated, larger, changed or not a file any more; both readers use it and
nothing else:

- `hvd-vs-ddp run --resume` re-runs every passed repetition with damage, one line each
  (hvd_vs_ddp/cli/resume_check.py), instead of trusting the manifest's status;
- `report` (hvd_vs_ddp/run_model/load.py) leaves such a cell out as "unreadable", its
  note naming the file and what is wrong with it.

A run recorded before digests (no `files`) is checked by reading: the results file must
be there, parse as the suites' results, carry the cell's launcher and world size and
have been written while that repetition ran (its pytest-benchmark `datetime`); its other
files are not vouched for (`LEGACY_NOTE`). Only reads: never writes anything.

    from hvd_vs_ddp.results_schema.integrity import check_run
    for (cell_id, rep), damage in check_run(Path("runs/x"), manifest).items():
        print(cell_id, rep, [d.line() for d in damage])
    python -m hvd_vs_ddp.results_schema.integrity RUN_DIR   # one line per damaged file
"""
from __future__ import annotations

import dataclasses
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from hvd_vs_ddp.common import run_layout
from hvd_vs_ddp.common.digests import Digest, digest
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.results_schema.errors import ResultsError
from hvd_vs_ddp.results_schema.manifest import CellEntry, Manifest, Repetition, RunStatus

LEGACY_NOTE = ("recorded before hvd-vs-ddp kept digests of a run's files: its results were "
               "checked by reading them; its timelines, traces and logs are not vouched for")
SLACK_S = 2.0  # a results file's datetime may lie this far past its repetition's end
ORCHESTRATING = ("recovery",)  # suites whose pytest runs alone and starts its own jobs


@dataclass(frozen=True)
class Damage:
    """One file of a repetition that is not what the run wrote, and how."""
    path: str   # as the manifest names it (relative to the run directory)
    why: str
    recorded: bool = False  # the repetition's own file as its record names it: resume
    #                          moves it aside (the re-run's output gate would refuse it)

    def line(self) -> str:
        return f"{self.path}: {self.why}"


def stems(manifest: Manifest) -> list[str]:
    """The file stem of every repetition: "<id>" for a cell run once, "<id>.r<k>" else."""
    out = []
    for c in manifest.cells:
        reps = c.repeats or []
        out += [c.id] if len(reps) <= 1 else [f"{c.id}.r{r.rep}" for r in reps]
    return out


def _owner(name: str, all_stems: Iterable[str]) -> str | None:
    """The stem a file of cells/ belongs to: the longest S with name S.json or S.<more>."""
    best = None
    for s in all_stems:
        if name.startswith(s + ".") and (best is None or len(s) > len(best)):
            best = s
    return best


def written_by(run_dir: Path, stem: str, all_stems: Iterable[str]) -> list[Path]:
    """The files of cells/ (recursively: a recovery trial's folder) and logs/ that the
    repetition with `stem` wrote, as they lie there now."""
    run_dir, all_stems = Path(run_dir), list(all_stems)
    found = []
    for folder in RunFolder(run_dir).cell_folders():
        for entry in sorted(folder.iterdir()):
            if _owner(entry.name, all_stems) != stem:
                continue
            if entry.is_file():
                found.append(entry)
            elif entry.is_dir():
                found += sorted(p for p in entry.rglob("*") if p.is_file())
    return found


def record(run_dir: Path, stem: str, all_stems: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`files` of a repetition: each file it wrote, relative to the run, with its digest."""
    run_dir = Path(run_dir)
    out = {}
    for path in written_by(run_dir, stem, all_stems):
        d = digest(path)
        if d is not None:
            out[RunFolder(run_dir).relative(path)] = d.to_dict()
    return out


def _inside(run_dir: Path, rel: str) -> Path | None:
    """run_dir/rel if it stays inside the run directory (no '..', not absolute)."""
    return RunFolder(run_dir).file(rel)


def check_files(run_dir: Path, files: dict[str, dict[str, Any]]) -> list[Damage]:
    """Every recorded file compared with what is there now."""
    out = []
    for rel, rec in sorted(files.items()):
        path = _inside(run_dir, rel)
        if path is None:
            out.append(Damage(rel, "lies outside the run directory; not read"))
            continue
        if path.exists() and not path.is_file():
            out.append(Damage(rel, "is not a file any more", recorded=True))
            continue
        why = Digest(rec["size"], rec["sha256"]).differs(digest(path))
        if why:
            out.append(Damage(rel, why, recorded=True))
    return out


def check_rep(run_dir: Path, cell: CellEntry, rep: RunStatus) -> list[Damage]:
    """What is wrong with the files of one passed run of a cell (a Repetition, or the
    cell entry itself in a run without repetitions); [] when they are as written."""
    run_dir = Path(run_dir)
    if rep.status != "passed":
        return []
    if not rep.results:
        return [Damage(run_layout.MANIFEST, f"passed cell {cell.id!r} names no results file")]
    if rep.files is None:
        return _check_legacy(run_dir, cell, rep)
    damage = check_files(run_dir, rep.files)
    if rep.results not in rep.files:
        damage.insert(0, Damage(rep.results, "not among the files the run recorded for "
                                             f"cell {cell.id!r}; not vouched for"))
    return damage


def _check_legacy(run_dir: Path, cell: CellEntry, rep: RunStatus) -> list[Damage]:
    """A repetition recorded before digests: its results must read as this cell's."""
    from hvd_vs_ddp.results_schema.files import load_cell_results

    rel = rep.results or ""
    path = _inside(run_dir, rel)
    if path is None:
        return [Damage(rel, "lies outside the run directory; not read")]
    if not path.is_file():
        return [Damage(rel, f"{'missing' if not path.exists() else 'not a file'}; the "
                            f"manifest says cell {cell.id!r} passed (`run --resume` re-runs "
                            "it)", recorded=True)]
    try:
        res = load_cell_results(path, cell)
    except ResultsError as err:
        text = str(err).removesuffix(" Re-run the cell.")  # resume says so itself
        return [Damage(rel, text.split(": ", 1)[1] if text.startswith(str(path)) else text,
                       recorded=True)]
    machine = res.machine
    if any(s in ORCHESTRATING for s in cell.suites):  # one process that starts the jobs
        machine = dataclasses.replace(machine, world_size=None, launcher=None)
    if machine.world_size is not None and machine.world_size != cell.world_size:
        return [Damage(rel, f"holds results of world size {machine.world_size}, not "
                            f"{cell.world_size}: another cell's file", recorded=True)]
    if machine.launcher is not None and machine.launcher != cell.launcher:
        return [Damage(rel, f"holds results of launcher {machine.launcher}, not "
                            f"{cell.launcher}: another cell's file", recorded=True)]
    when = _written_at(path)
    if when is not None and rep.started:
        try:
            began = datetime.datetime.fromisoformat(rep.started)
        except ValueError:
            return []
        end = began + datetime.timedelta(seconds=(rep.seconds or 0.0) + SLACK_S)
        if not began <= when <= end:  # `started` is truncated to the second
            return [Damage(rel, f"was written at {when.isoformat(timespec='seconds')}, "
                                f"outside its run ({rep.started}, {rep.seconds} s): "
                                "another run's file", recorded=True)]
    return []


def _written_at(path: Path) -> datetime.datetime | None:
    """pytest-benchmark's `datetime` of a results file (UTC), if it has a usable one."""
    from hvd_vs_ddp.results_schema.io import read_json

    try:
        doc = read_json(path, "results")
        when = datetime.datetime.fromisoformat(str(doc.get("datetime")))
    except (ResultsError, ValueError, AttributeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def runs_of(cell: CellEntry) -> list[RunStatus]:
    """The recorded runs of a cell: its repetitions, or the cell itself without them."""
    return list(cell.repeats) if cell.repeats else [cell]


def check_cell(run_dir: Path, cell: CellEntry) -> list[Damage]:
    """Every damaged file of a cell's passed runs."""
    return [d for r in runs_of(cell) for d in check_rep(run_dir, cell, r)]


def check_run(run_dir: Path, manifest: Manifest) -> dict[tuple[str, int], list[Damage]]:
    """(cell id, repetition) -> its damage, for every passed run with some."""
    out = {}
    for cell in manifest.cells:
        for r in runs_of(cell):
            damage = check_rep(run_dir, cell, r)
            if damage:
                out[(cell.id, r.rep if isinstance(r, Repetition) else 1)] = damage
    return out


def legacy(manifest: Manifest) -> bool:
    """Whether some passed run of the manifest was recorded without digests."""
    return any(r.status == "passed" and r.files is None
               for c in manifest.cells for r in runs_of(c))


if __name__ == "__main__":
    from hvd_vs_ddp.results_schema.files import load_manifest

    for arg in sys.argv[1:]:
        man, _ = load_manifest(Path(arg))
        found = check_run(Path(arg), man)
        for (cid, k), damage in found.items():
            for d in damage:
                print(f"{arg}: {cid} r{k}: {d.line()}")
        print(f"{arg}: {'damaged' if found else 'as written'}"
              f"{'; ' + LEGACY_NOTE if legacy(man) else ''}")

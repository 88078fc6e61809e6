"""What `run --resume` re-runs: the manifest's statuses checked against the files.

A resumed run trusts no status by itself. `repair(run_dir, manifest)` verifies every
passed repetition with the one verifier (hvd_vs_ddp/results_schema/integrity.py); a
repetition whose files are missing, truncated, corrupt or different becomes "pending"
again (its error says why), and each damaged file that is still there is moved aside to
`damaged/<time>/<its path>` (kept, never deleted, and out of the way of the re-run's
output gate). It returns one line per repetition, e.g.

    cells/ddp-gloo-np2.json: truncated (120 of 4,096 bytes); re-running ddp-gloo-np2

The runner (hvd_vs_ddp/cli/runner.py) calls it once it holds the run's lock, then runs
every repetition that is not "passed". Files of undamaged repetitions are not touched.

    man, _ = load_manifest(run_dir); lines = repair(run_dir, man)
    python -m hvd_vs_ddp.cli.resume_check RUN_DIR     # what a resume would re-run (dry)
"""
from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

from hvd_vs_ddp.common import run_layout
from hvd_vs_ddp.common.digests import Digest, digest
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.results_schema import Manifest, Repetition, load_manifest
from hvd_vs_ddp.results_schema.integrity import Damage, check_run, runs_of

DAMAGED = run_layout.DAMAGED  # the run's folder for files moved aside (RunFolder.damaged)


def _label(manifest: Manifest, cell_id: str, rep: int) -> str:
    reps = manifest.cell(cell_id).repeats or []
    return cell_id if len(reps) <= 1 else f"{cell_id}.r{rep}"


def plan(run_dir: Path, manifest: Manifest) -> dict[tuple[str, int], list[Damage]]:
    """The damaged passed repetitions (read only)."""
    return check_run(Path(run_dir), manifest)


def _move_aside(run_dir: Path, rel: str, stamp: str) -> None:
    src = (run_dir / rel)
    if not (src.exists() or src.is_symlink()) or \
            not src.parent.resolve().is_relative_to(run_dir.resolve()):
        return  # a file, a link or a folder where a file was: out of the re-run's way
    dst = RunFolder(run_dir).damaged(stamp) / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)


def _vouched_by_another(run_dir: Path, manifest: Manifest, rel: str, cell_id: str,
                        k: int) -> bool:
    """Whether some other passed run records `rel` with the digest it has now (an edited
    manifest may name one file twice): then it is that run's file, and stays."""
    now = digest(run_dir / rel)
    for cell in manifest.cells:
        for r in runs_of(cell):
            if (cell.id, getattr(r, "rep", 1)) == (cell_id, k) or r.status != "passed":
                continue
            rec = (r.files or {}).get(rel)
            if rec is not None and now == Digest(rec["size"], rec["sha256"]):
                return True
    return False


def repair(run_dir: Path, manifest: Manifest, dry: bool = False) -> list[str]:
    """Mark every damaged passed repetition "pending" (and move its damaged files aside
    unless `dry`); one line per repetition."""
    run_dir = Path(run_dir)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    lines = []
    for (cell_id, k), damage in plan(run_dir, manifest).items():
        entry = manifest.cell(cell_id)
        label = _label(manifest, cell_id, k)
        why = "; ".join(d.line() for d in damage)
        lines.append(f"{why}; re-running {label}")
        if dry:
            continue
        for d in damage:  # a file of its own record, unless another run vouches for it
            if d.recorded and not _vouched_by_another(run_dir, manifest, d.path, cell_id, k):
                _move_aside(run_dir, d.path, stamp)
        if entry.repeats is None:  # a run recorded before repetitions: one per cell
            entry.repeats = [Repetition(rep=1, status=entry.status, results=entry.results,
                                        log=entry.log, started=entry.started,
                                        seconds=entry.seconds, returncode=entry.returncode,
                                        files=entry.files)]
        rep = entry.repeats[k - 1]
        rep.status, rep.error = "pending", f"{label}: re-run by --resume: {why}"
        rep.files = None
        entry.status = "pending"
    return lines


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        man, _ = load_manifest(Path(arg))
        for line in repair(Path(arg), man, dry=True) or ["nothing to re-run for damage"]:
            print(f"{arg}: {line}")

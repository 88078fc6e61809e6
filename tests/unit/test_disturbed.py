"""reports/disturbed.py on a recorded run: repetitions marked with foreign load are
left out of the timings (and the report says so), kept when too few undisturbed ones
remain or with --keep-disturbed, and a disturbed repetition moves the verdict's
interval only when it is kept.

    python -m pytest tests/unit/test_disturbed.py -q
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from reports.disturbed import leave_out_disturbed
from reports.load import load_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-repeats"


def _marked(tmp_path: Path, loads: dict[str, dict[int, float]]) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    man = json.loads((run / "manifest.json").read_text())
    for c in man["cells"]:
        for r in c["repeats"]:
            r["foreign_load"] = loads.get(c["id"], {}).get(r["rep"], 0.03)
    (run / "manifest.json").write_text(json.dumps(man))
    return run


def _timed_reps(cell) -> set[int]:
    return {b.rep for b in cell.benchmarks if b.kind in ("throughput", "compute_only")}


def test_disturbed_repetitions_are_left_out_and_named(tmp_path):
    run = load_run(_marked(tmp_path, {"horovod-horovodrun-gloo-np2": {2: 1.0, 5: 0.5}}))
    notes = leave_out_disturbed(run)
    cell = next(c for c in run.cells if c.id == "horovod-horovodrun-gloo-np2")
    assert _timed_reps(cell) == {1, 3, 4, 6}
    assert len(notes) == 1 and "r2 (1 cores), r5 (0.5 cores)" in notes[0]
    assert "left out" in notes[0] and "4 undisturbed" in notes[0]
    others = [c for c in run.cells if c is not cell]
    assert all(_timed_reps(c) == set(range(1, 7)) for c in others)


def test_kept_when_too_few_undisturbed_remain_or_asked(tmp_path):
    loads = {"ddp-gloo-torchrun-np2": {k: 0.9 for k in range(1, 6)}}
    run = load_run(_marked(tmp_path, loads))
    notes = leave_out_disturbed(run)
    cell = next(c for c in run.cells if c.id == "ddp-gloo-torchrun-np2")
    assert _timed_reps(cell) == set(range(1, 7)) and "only 1 undisturbed" in notes[0]
    run = load_run(_marked(tmp_path / "b", {"ddp-gloo-torchrun-np2": {1: 0.9}}))
    notes = leave_out_disturbed(run, keep=True)
    assert "--keep-disturbed" in notes[0]
    assert all(_timed_reps(c) == set(range(1, 7)) for c in run.cells)


def test_below_the_threshold_nothing_changes(tmp_path):
    run = load_run(_marked(tmp_path, {"ddp-gloo-torchrun-np2": {1: 0.19}}))  # < 10% of 2
    assert leave_out_disturbed(run) == []
    assert all(_timed_reps(c) == set(range(1, 7)) for c in run.cells)

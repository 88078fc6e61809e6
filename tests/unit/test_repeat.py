"""`hvd-vs-ddp run --repeat N`: the interleaved, seeded order of repetitions, the
manifest it writes, resuming a run written before repetitions existed, and the
cell's status from its repetitions. Nothing is launched here (the system tests and
the recorded fixture tests/fixtures/runs/cpu-repeats run real repetitions).

    python -m pytest tests/unit/test_repeat.py -q
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.presets import PRESETS
from hvd_vs_ddp.cli.runner import Runner, _aggregate, repetitions, schedule
from hvd_vs_ddp.results_schema import CellEntry, Manifest, Repetition, load_manifest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
CELLS = [Cell("ddp-gloo", "torchrun", 2, ("throughput", "convergence")),
         Cell("horovod", "horovodrun-gloo", 2, ("throughput",)),
         Cell("compute-only", "torchrun", 2, ("compute",)),
         Cell("ddp-gloo", "torchrun", 4, ("collectives",))]   # times nothing: runs once


def test_schedule_is_round_robin_shuffled_and_seeded():
    order = schedule(CELLS, 3, seed=7)
    timed = [c.id for c in CELLS if repetitions(c, 3) == 3]
    assert len(order) == 3 * len(timed) + 1
    rounds = [[t.rsplit(".r", 1)[0] for t in order if t.endswith(f".r{k}")] for k in (1, 2, 3)]
    assert sorted(rounds[0]) == sorted([c.id for c in CELLS])
    assert sorted(rounds[1]) == sorted(rounds[2]) == sorted(timed)
    # round k is finished before round k+1 starts
    assert [int(t.rsplit(".r", 1)[1]) for t in order] == sorted(
        int(t.rsplit(".r", 1)[1]) for t in order)
    assert schedule(CELLS, 3, seed=7) == order
    assert any(schedule(CELLS, 3, seed=s) != order for s in range(1, 6))


def test_new_run_manifest_records_repeat_seed_order(tmp_path):
    r = Runner(tmp_path / "run", PRESETS["quick"], CELLS, ["hvd-vs-ddp", "run"], 60.0,
               repeat=4, order_seed=11)
    m = r.manifest
    assert (m.repeat, m.order_seed, m.order) == (4, 11, schedule(CELLS, 4, 11))
    assert [len(c.repeats or []) for c in m.cells] == [4, 4, 4, 1]
    m.check()
    back = Manifest.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.cells[0].repeats == m.cells[0].repeats


def test_preset_default_repeat(tmp_path):
    r = Runner(tmp_path / "run", PRESETS["quick"], CELLS, [], 60.0, order_seed=1)
    assert r.manifest.repeat == PRESETS["quick"].repeat >= 2


def test_resume_of_a_run_without_repetitions_runs_nothing_passed(tmp_path):
    run = tmp_path / "cpu-small"
    shutil.copytree(FIXTURES / "cpu-small", run)
    man, _ = load_manifest(run)
    cells = [Cell.from_dict(c.to_dict()) for c in man.cells]
    r = Runner(run, PRESETS["quick"], cells, [], 60.0)
    assert r.manifest.repeat == 1 and len(r.manifest.order or []) == len(cells)
    out = r.run()  # every cell passed: nothing is launched
    assert out.complete and all(c.status == "passed" for c in out.cells)
    again, _ = load_manifest(run)
    assert all(c.repeats and c.repeats[0].results == c.results for c in again.cells)


def _entry(*statuses: str) -> CellEntry:
    e = CellEntry.pending("x-single-np1", "x", "single", 1, ["throughput"])
    e.repeats = [Repetition(rep=k + 1, status=s, seconds=2.0, results=f"cells/x.r{k + 1}.json",
                            error=None if s == "passed" else f"x.r{k + 1}: boom")
                 for k, s in enumerate(statuses)]
    return e


def test_cell_status_from_its_repetitions():
    e = _entry("passed", "passed")
    _aggregate(e)
    assert (e.status, e.seconds, e.results, e.error) == ("passed", 4.0, "cells/x.r1.json", None)
    e = _entry("passed", "failed", "pending")
    _aggregate(e)
    assert e.status == "failed" and e.error == "x.r2: boom"
    e = _entry("passed", "pending")
    _aggregate(e)
    assert e.status == "pending"

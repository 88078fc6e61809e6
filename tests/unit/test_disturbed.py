"""hvd_vs_ddp/run_model/disturbed.py on a recorded run: repetitions marked with foreign load are
left out of the timings (and the report says so), kept when too few undisturbed ones
remain or with --keep-disturbed, and a disturbed repetition moves the verdict's
interval only when it is kept.

    python -m pytest tests/unit/test_disturbed.py -q
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from hvd_vs_ddp.run_model.disturbed import leave_out_disturbed, still_disturbed
from hvd_vs_ddp.run_model.load import load_run

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


def test_still_disturbed_names_the_cells_whose_timings_kept_the_load(tmp_path):
    """What the projection refuses a firm verdict from (projection/verdict.py): the cells
    whose timings still hold a disturbed repetition, and only those."""
    left = load_run(_marked(tmp_path / "a", {"horovod-horovodrun-gloo-np2": {2: 1.0}}))
    assert still_disturbed(left) == ["horovod-horovodrun-gloo-np2"]  # before leaving out
    leave_out_disturbed(left)
    assert still_disturbed(left) == []  # five quiet repetitions: it was left out
    kept = load_run(_marked(tmp_path / "b", {"ddp-gloo-torchrun-np2": {k: 0.9 for k in
                                                                       range(1, 6)}}))
    leave_out_disturbed(kept)
    assert still_disturbed(kept) == ["ddp-gloo-torchrun-np2"]
    asked = load_run(_marked(tmp_path / "c", {"ddp-gloo-torchrun-np2": {1: 0.9}}))
    leave_out_disturbed(asked, keep=True)
    assert still_disturbed(asked) == ["ddp-gloo-torchrun-np2"]


def test_below_the_threshold_nothing_changes(tmp_path):
    run = load_run(_marked(tmp_path, {"ddp-gloo-torchrun-np2": {1: 0.19}}))  # < 10% of 2
    assert leave_out_disturbed(run) == [] and still_disturbed(run) == []
    assert all(_timed_reps(c) == set(range(1, 7)) for c in run.cells)


def test_the_report_leaves_a_disturbed_repetition_out_and_says_so(tmp_path):
    """Through `hvd-vs-ddp report`: a wildly slow repetition marked as disturbed stays
    out of the intervals (one repetition fewer); with --keep-disturbed it widens them."""
    from hvd_vs_ddp.cli import main as cli

    run = _marked(tmp_path, {"ddp-gloo-torchrun-np2": {3: 1.5}})
    cell = run / "cells" / "ddp-gloo-torchrun-np2.r3.json"
    doc = json.loads(cell.read_text())
    for b in doc["benchmarks"]:  # repetition 3 ten times slower, as under foreign load
        info = b["extra_info"]
        if info.get("kind") == "throughput":
            info["step_times"] = [t * 10 for t in info["step_times"]]
            info["samples_per_s"] = [v / 10 for v in info["samples_per_s"]]
            if info.get("rank_step_times"):
                info["rank_step_times"] = [[t * 10 for t in r] for r in info["rank_step_times"]]
    cell.write_text(json.dumps(doc))
    widths = {}
    for keep in (False, True):
        out = tmp_path / f"out-{keep}" / "report.html"
        assert cli(["report", str(run), "-o", str(out)] + ["--keep-disturbed"] * keep) == 0
        pairs = [p for p in json.loads(out.with_name("verdicts.json").read_text())["pairs"]
                 if p["b"].startswith("ddp-gloo") and p["world_size"] == 2]
        assert {p["repetitions"] for p in pairs} == {6 if keep else 5}
        gpt = next(p for p in pairs if p["case"] == "gpt" and p["a"] == "horovod (gloo)")
        widths[keep] = gpt["hi"] / gpt["lo"]
        md = out.with_suffix(".md").read_text()
        assert ("r3 (1.5 cores)" in md) and (("left out" in md) != keep)
    assert widths[True] > 1.5 * widths[False]


def test_every_reader_loads_a_run_through_the_one_loader():
    """Leaving out disturbed repetitions is one step of one loader
    (run_model.disturbed.load_judged_run): no reader of the package, the scripts or the
    benchmarks calls the step itself, so none can forget it or do it differently."""
    root = Path(__file__).resolve().parents[2]
    own = root / "hvd_vs_ddp" / "run_model" / "disturbed.py"
    callers = [p.relative_to(root).as_posix()
               for folder in ("hvd_vs_ddp", "scripts", "benchmarks", "suites")
               for p in sorted((root / folder).rglob("*.py"))
               if p != own and "leave_out_disturbed(" in p.read_text()]
    assert callers == []

"""The report's "Failure and recovery" section from a REAL recorded run
(tests/fixtures/runs/cpu-recovery: `hvd-vs-ddp run --preset recovery --repeat 3
--order-seed 31` on this project's 2-core machine, its .recovery trial folders left out),
checked against the records it was built from: one table row per path, pattern and world
size, the verdicts' medians and ratios, the timeline figure, and verdicts.json.

    python -m pytest tests/unit/test_recovery_report.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-recovery"


def _trials() -> list[dict]:
    out = []
    for f in sorted((RUN / "cells").glob("*.json")):
        out += [b["extra_info"] for b in json.loads(f.read_text())["benchmarks"]
                if b["extra_info"]["kind"] == "recovery"]
    return out


@pytest.fixture(scope="module")
def report(recorded_report):
    paths = recorded_report(RUN.name)
    return paths, paths.markdown.read_text(), json.loads(paths.verdicts.read_text())


def test_section_table_and_figure(report):
    paths, md, _ = report
    section = md.split("## Failure and recovery", 1)[1].split("\n## ", 1)[0]
    trials = _trials()
    series = {(t["path"], t["checkpoint"], t["world_size"]) for t in trials}
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert len(rows) == 1 + len(series)  # header + one per path, pattern and world size
    assert (paths.figures_dir / "recovery_timeline.png").exists()
    assert "recovery_timeline.png" in section


def test_verdicts_json_matches_the_records(report):
    _, md, doc = report
    trials = _trials()
    assert len(doc["recovery"]["trials"]) == len(trials)
    pairs = doc["recovery"]["pairs"]
    worlds = sorted({t["world_size"] for t in trials})
    torch_side = {(t["path"], t["checkpoint"]) for t in trials if t["library"] != "horovod"}
    assert len(pairs) == len(worlds) * len(torch_side)
    for p in pairs:
        ttr = p["time_to_recover"]
        a = [t["recovery_s"] for t in trials if t["world_size"] == p["world_size"]
             and t["library"] == "horovod"]
        b = [t["recovery_s"] for t in trials if t["world_size"] == p["world_size"]
             and p["b"].endswith(f"({t['checkpoint']})") and t["library"] != "horovod"]
        assert ttr["a_median_s"] == pytest.approx(np.median(a))
        assert ttr["b_median_s"] == pytest.approx(np.median(b))
        assert ttr["ratio"] == pytest.approx(np.median(b) / np.median(a))
        assert ttr["lo"] <= ttr["ratio"] <= ttr["hi"] and ttr["repetitions"] == len(a)
        assert ttr["verdict"] in ("faster", "equivalent", "inconclusive")
        assert ttr["text"] in md  # the report says what verdicts.json says
    assert all(t["completed"] and not t["hang"] and t["leftovers"] == 0
               for t in doc["recovery"]["trials"])

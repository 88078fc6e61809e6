"""The answer sentences, verdicts.json and the tails/straggler tables, checked against
REAL recorded repetitions (tests/fixtures/runs/cpu-repeats, recorded as its
docstring in tests/unit/test_calibration.py says) and a single-repetition run
(tests/fixtures/runs/cpu-small). Every expected number is recomputed here from the
raw cell files with numpy, not through the report's frames.

    python -m pytest tests/unit/test_verdicts.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.reports import build_report
from hvd_vs_ddp.run_model.verdicts import band, classify

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
REPEATS, SMALL = FIXTURES / "cpu-repeats", FIXTURES / "cpu-small"


def _throughput(run: Path) -> dict[tuple[str, int, tuple[str, str]], list[dict]]:
    """(workload, world size, (backend, launcher)) -> every repetition's extra_info."""
    man = json.loads((run / "manifest.json").read_text())
    out: dict[tuple[str, int, tuple[str, str]], list[dict]] = {}
    for c in man["cells"]:
        for rep in c.get("repeats") or [c]:
            doc = json.loads((run / rep["results"]).read_text())
            for b in doc["benchmarks"]:
                e = b["extra_info"]
                if e["kind"] == "throughput":
                    key = (e["workload"], e["world_size"], (e["backend"], e["launcher"]))
                    out.setdefault(key, []).append(e)
    return out


@pytest.fixture(scope="module")
def rep_report(recorded_report):
    return recorded_report(REPEATS.name)  # the default margin, 5%


def _answer_box(md: str) -> list[str]:
    return [ln[2:] for ln in md.split("**Answer**")[1].split("\n## ")[0].splitlines()
            if ln.startswith("- ")]


def test_verdicts_json_matches_the_recorded_files(rep_report):
    doc = json.loads(rep_report.verdicts.read_text())
    assert rep_report.verdicts == rep_report.html.with_name("verdicts.json")
    assert (doc["format"], doc["format_version"], doc["margin"]) == \
        ("hvd-vs-ddp/verdicts", 1, 0.05)
    assert doc["runs"][0]["repeat"] == 6
    cells = _throughput(REPEATS)
    assert len(doc["answers"]) == 4  # mlp, gpt at 1 and 2 ranks
    for a in doc["answers"]:
        mine = {s: reps for (w, n, s), reps in cells.items()
                if w == a["workload"] and n == a["world_size"]}
        med = {s: float(np.median(np.concatenate([e["samples_per_s"] for e in reps])))
               for s, reps in mine.items()}
        hvd = max((s for s in med if s[0] == "horovod"), key=med.get)
        ddp = max((s for s in med if s[0].startswith("ddp")), key=med.get)

        def side(x):
            return (x["backend"], x["launcher"])
        assert side(a["fastest"]) == max(med, key=med.get)
        assert side(a["best_horovod"]) == hvd and side(a["best_ddp"]) == ddp
        assert a["fastest"]["samples_per_s"] == pytest.approx(max(med.values()), rel=1e-12)
        c = a["comparison"]
        assert c["ratio"] == pytest.approx(med[hvd] / med[ddp], rel=1e-12)
        assert c["lo"] < c["hi"] and c["repetitions"] == 6 and c["strength"] == "firm"
        assert c["verdict"] == classify(c["lo"], c["hi"], 0.05)
        assert c["scope"] == ("overhead" if a["world_size"] == 1 else "communication")
        if c["verdict"] == "inconclusive":
            assert c["repetitions_needed"] is None or c["repetitions_needed"] > 6
        losses = [mine[s][0]["losses"] for s in (hvd, ddp)]
        dev = float(np.max(np.abs(np.subtract(*losses)) / np.abs(losses[1])))
        assert a["losses"]["source"] == "throughput"
        assert a["losses"]["max_rel_dev"] == pytest.approx(dev, abs=1e-15)
        assert a["losses"]["same"] == (dev <= 1e-4)
    assert len(doc["pairs"]) == 2 * (1 + 2)  # np1: 1 hvd x 1 ddp; np2: 2 hvd x 1 ddp


def test_answer_box_is_one_sentence_per_case_first(rep_report):
    doc = json.loads(rep_report.verdicts.read_text())
    box = _answer_box(rep_report.markdown.read_text())
    assert box[:4] == [a["sentence"] for a in doc["answers"]]
    for a in doc["answers"]:
        s = a["sentence"]
        ranks = "1 rank" if a["world_size"] == 1 else f"{a['world_size']} ranks"
        assert s.startswith(f"{a['case']} at {ranks}: fastest measured: "
                            f"{a['fastest']['series']} (")
        assert "best Horovod / best DDP: " in s and a["comparison"]["text"] in s
        assert ("framework overhead without communication" in s) == (a["world_size"] == 1)
        assert "indicative" not in s  # six repetitions: intervals include run-to-run
        assert "trained to the same losses" in s or "DIFFER" in s


def test_margin_changes_verdicts_consistently(tmp_path):
    wide = build_report([REPEATS], tmp_path / "wide.html", margin=0.5)
    doc = json.loads(wide.verdicts.read_text())
    low, high = band(0.5)
    for p in doc["pairs"]:
        inside = low <= p["lo"] and p["hi"] <= high
        assert (p["verdict"] == "equivalent") == inside
    assert "±50%" in wide.markdown.read_text()


def test_single_repetition_is_indicative_only(recorded_report):
    doc = json.loads(recorded_report(SMALL.name).verdicts.read_text())
    assert doc["pairs"] and all(p["strength"] == "indicative" and p["repetitions"] == 1
                                for p in doc["pairs"])
    assert all("within-run only" in a["sentence"] for a in doc["answers"] if a["comparison"])


def test_tails_and_stragglers_from_the_files(rep_report):
    md = rep_report.markdown.read_text()
    tails = [ln for ln in md.split("### Step-time tails")[1].split("###")[0].splitlines()
             if ln.startswith("| cpu-repeats |")]
    strag = [ln for ln in md.split("### Stragglers")[1].split("\n## ")[0].splitlines()
             if ln.startswith("| cpu-repeats |")]
    checked = 0
    for (wl, n, _), reps in _throughput(REPEATS).items():
        rest = np.concatenate([e["step_times"][1:] for e in reps])
        first = np.median([e["step_times"][0] for e in reps])
        p50, p95, p99 = np.percentile(rest, [50, 95, 99]) * 1e3
        row = [ln for ln in tails if ln.startswith(f"| cpu-repeats | {wl} |") and
               f"| {n} | 6 |" in ln and f"| {p50:.2f} | {p95:.2f} | {p99:.2f} |" in ln]
        assert len(row) == 1, (wl, n, p50)
        assert f"| {first * 1e3:.2f} |" in row[0]
        if n > 1:
            t = np.concatenate([np.asarray(e["rank_step_times"]) for e in reps], axis=1)
            slow = np.argmax(t, axis=0)
            for k in range(n):
                hit = [ln for ln in strag if ln.startswith(f"| cpu-repeats | {wl} |") and
                       f"| {n} | {k} | {int((slow == k).sum())}/{t.shape[1]} (" in ln]
                assert hit, (wl, n, k)
        checked += 1
    assert checked == 2 * 5  # mlp, gpt x (np1: ddp-gloo, horovod; np2: 3 series)

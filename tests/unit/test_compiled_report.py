"""The report's "Compiled" section, built from a REAL recorded compile run, checked against
its inputs; and the answer's sentence when compiling changes the winner.

The fixture tests/fixtures/runs/cpu-compile was recorded on this project's 2-core CPU
machine (while it was loaded: its numbers are noisy; the tests check only that the
report says what the files say) by

    hvd-vs-ddp run --preset compile --workloads mlp --world-sizes 2 \
        --suite-args "--profile-steps 0" --name cpu-compile --runs-dir tests/fixtures/runs

with the run's inductor-cache/ folder (compiler artefacts, not results) deleted.

    python -m pytest tests/unit/test_compiled_report.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hvd_vs_ddp.reports.compare import add_scaling
from hvd_vs_ddp.reports.compiled_section import TITLE, compiled_section, sentences
from hvd_vs_ddp.run_model.compile_pairs import LOSS_TOLERANCE, pairs
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp
from hvd_vs_ddp.run_model.stats import RatioCI
from hvd_vs_ddp.run_model.verdicts import judge

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-compile"


@pytest.fixture(scope="module")
def data():
    return build_frames([load_run(RUN)])


def _records():
    for f in sorted((RUN / "cells").glob("*.json")):
        doc = json.loads(f.read_text())
        for b in doc.get("benchmarks", []) if isinstance(doc, dict) else []:
            if b["extra_info"]["kind"] == "throughput":
                yield b["extra_info"]


def test_every_library_is_paired_with_its_eager_twin(data):
    p = pairs(data, 0.05)
    assert sorted(p["label"]) == ["ddp-gloo", "horovod (gloo)"]
    assert set(p["mode"]) == {"inductor"} and set(p["world_size"]) == {2}
    for _, r in p.iterrows():
        assert r["compiled_case"] == "mlp [inductor]" and r["case"] == "mlp"
        assert r["ratio"] == pytest.approx(r["compiled_sps"] / r["eager_sps"])
        assert r["lo"] <= r["ratio"] <= r["hi"]


def test_compile_seconds_are_the_records_cold_and_warm(data):
    p = pairs(data, 0.05).set_index("label")
    seen = {"ddp-gloo": {"cold": [], "warm": []}, "horovod": {"cold": [], "warm": []}}
    for rec in _records():
        if rec.get("compile_mode") != "inductor":
            continue
        state = rec["compile_info"]["cache"].split(":")[0]
        seen[rec["backend"]][state].append(rec["compile_s"])
    for backend, label in (("ddp-gloo", "ddp-gloo"), ("horovod", "horovod (gloo)")):
        assert seen[backend]["cold"] and seen[backend]["warm"]  # repetition 1 and 2
        assert p.loc[label, "compile_cold_s"] == pytest.approx(
            np.median(seen[backend]["cold"]))
        assert p.loc[label, "compile_warm_s"] == pytest.approx(
            np.median(seen[backend]["warm"]))


def test_graph_breaks_and_the_ddp_optimizer(data):
    p = pairs(data, 0.05).set_index("label")
    assert p.loc["horovod (gloo)", "graph_breaks"] == 0
    assert p.loc["ddp-gloo", "graph_breaks"] > 0  # DDP's own (its logger, its forward)
    assert p.loc["ddp-gloo", "optimize_ddp"] == "ddp_optimizer"
    assert p.loc["ddp-gloo", "ddp_buckets"] == [1]  # mlp fits DDP's first bucket


def test_the_section_in_the_report(recorded_report, data):
    paths = recorded_report(RUN.name)
    md = paths.markdown.read_text()
    assert f"\n## {TITLE}\n" in md
    section = md.split(f"\n## {TITLE}\n")[1].split("\n## ")[0]
    for title in ("Compiled vs eager, per library", "Overlap before and after compiling",
                  "Compiled Horovod vs compiled DDP"):
        assert title in section
    assert "ddp-gloo compiled" in section and "horovod (gloo) compiled" in section
    cmp = hvd_vs_ddp(add_scaling(data.throughput))
    sec = compiled_section(data, cmp, 0.05)
    assert sec is not None
    overlap = sec.blocks[1].df
    ddp = overlap[overlap["library"] == "ddp-gloo"].iloc[0]
    assert ddp["own figures"] == "DDP's own statistics" and "->" in ddp["comm (ms)"]
    hvd = overlap[overlap["library"] == "horovod (gloo)"].iloc[0]
    assert hvd["own figures"] == "Horovod's timeline"


def test_compiled_and_eager_losses_agree_in_the_fixture(data):
    p = pairs(data, 0.05)
    assert all(p["same_losses"]) and (p["loss_dev"] <= LOSS_TOLERANCE).all()


def test_no_section_without_a_compiled_cell():
    small = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-small"
    d = build_frames([load_run(small)])
    assert compiled_section(d, hvd_vs_ddp(add_scaling(d.throughput)), 0.05) is None


def _v(ratio, lo, hi):
    return judge(RatioCI(ratio, lo, hi, 3), 0.05, 2, "horovod (gloo)", "ddp-gloo")


def test_a_sentence_only_where_compiling_changes_the_winner():
    rows = [{"run": "r", "case": "gpt", "mode": "inductor", "world_size": 2,
             "horovod": "horovod (gloo)", "ddp": "ddp-gloo", "eager": _v(0.8, 0.75, 0.85),
             "compiled": _v(1.2, 1.1, 1.3)},
            {"run": "r", "case": "mlp", "mode": "inductor", "world_size": 2,
             "horovod": "horovod (gloo)", "ddp": "ddp-gloo", "eager": _v(0.8, 0.75, 0.85),
             "compiled": _v(0.7, 0.65, 0.75)}]
    hh = pd.DataFrame(rows)
    hh["changed"] = [r["eager"].faster != r["compiled"].faster for r in rows]
    out = sentences(hh)
    assert len(out) == 1
    assert out[0].startswith("Compiling (inductor) flips which library is faster for gpt "
                             "at 2 ranks: eager, ddp-gloo is 25% faster than horovod (gloo)")
    assert "; compiled, horovod (gloo) is 20% faster than ddp-gloo" in out[0]
    hh.loc[1, "changed"], hh.loc[1, "compiled"] = True, _v(0.8, 0.5, 1.3)
    assert "changes the verdict for mlp at 2 ranks: eager, ddp-gloo is 25% faster" \
        in sentences(hh)[1]

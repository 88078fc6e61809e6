"""The report's "Input pipeline" section, built from a REAL recorded run, checked against
its inputs.

The fixture tests/fixtures/runs/cpu-input was recorded on this project's 2-core CPU
machine while other work loaded it (load average 10-15: its numbers are noisy; the tests
check only that the report says what the files say) by

    hvd-vs-ddp run --backends ddp-gloo,horovod --world-sizes 2 \
        --launchers torchrun,horovodrun-gloo --suites throughput,compute \
        --input memory,jpeg --repeat 3 --order-seed 51 \
        --workloads torchvision:squeezenet1_1 --suite-args "--workload-param \
        torchvision:squeezenet1_1:image_size=32 --workload-param \
        torchvision:squeezenet1_1:batch_size=16 --workload-param \
        torchvision:squeezenet1_1:samples=512 --jpeg-size 256" --name input-np2

(2026-11-27, 12.7 minutes; other work used about 1.6 of the 2 cores throughout: the
runner's foreign load, 1.54-1.68 per repetition), renamed cpu-input and scrubbed of
machine paths (scripts/scrub_fixture_paths.py).

    python -m pytest tests/unit/test_input_report.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.reports.compare import add_scaling
from hvd_vs_ddp.reports.input_section import TITLE, pair_verdicts, per_library
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
RUN = FIXTURES / "cpu-input"


@pytest.fixture(scope="module")
def data():
    return build_frames([load_run(RUN)])


@pytest.fixture(scope="module")
def cmp(data):
    return hvd_vs_ddp(add_scaling(data.throughput))


def _records(backend: str, mode: str) -> list[dict]:
    out = []
    for f in sorted((RUN / "cells").glob("*.json")):
        for b in json.loads(f.read_text())["benchmarks"]:
            e = b["extra_info"]
            if e["kind"] == "throughput" and e["backend"] == backend \
                    and e.get("input_mode", "memory") == mode:
                out.append(e)
    return out


def test_each_library_is_paired_with_its_memory_twin(data):
    p = per_library(data, 0.05)
    assert sorted(p["label"]) == ["ddp-gloo", "horovod (gloo)"]
    assert set(p["world_size"]) == {2} and (p["reps"] == 3).all()
    for backend, label in (("ddp-gloo", "ddp-gloo"), ("horovod", "horovod (gloo)")):
        r = p.set_index("label").loc[label]
        for mode, column in (("memory", "memory_sps"), ("jpeg", "jpeg_sps")):
            steps = np.concatenate([e["samples_per_s"] for e in _records(backend, mode)])
            assert r[column] == pytest.approx(np.median(steps))
    for _, r in p.iterrows():
        assert r["ratio"] == pytest.approx(r["jpeg_sps"] / r["memory_sps"])
        assert r["lo"] <= r["ratio"] <= r["hi"]
        assert "[jpeg input]" not in r["case"]  # the memory twin's case


def test_cpu_and_waits_are_the_records_medians(data):
    p = per_library(data, 0.05).set_index("label")
    for backend, label in (("ddp-gloo", "ddp-gloo"), ("horovod", "horovod (gloo)")):
        recs = _records(backend, "jpeg")
        assert len(recs) == 3
        u = p.loc[label, "jpeg"]
        assert u["host_cores"] == pytest.approx(np.median([r["host_cpu_cores"] for r in recs]))
        assert u["loader_cores"] == pytest.approx(
            np.median([r["loader_cpu_cores"] for r in recs]))
        assert u["loader_cores"] > 0 and u["workers"] == recs[0]["loader_workers"] == 2
        waits = np.concatenate([r["data_wait_s"] for r in recs])
        assert u["wait_s"] == pytest.approx(np.median(waits))
        main = np.median([np.mean([rk["threads"]["main thread"]
                                   for rk in r["input_pipeline"]["ranks"]]) for r in recs])
        assert u["main_cores"] == pytest.approx(main)
        assert u["cores_per_rank"] == pytest.approx(recs[0]["input_pipeline"]["cores"] / 2)
        memory = p.loc[label, "memory"]
        assert memory["loader_cores"] == 0 and memory["workers"] == 0


def test_the_pair_verdicts_are_the_comparisons_own(cmp):
    pv = pair_verdicts(cmp)
    assert len(pv) == 1
    r = pv.iloc[0]
    jpeg = cmp[cmp["input_mode"] == "jpeg"].iloc[0]
    mem = cmp[cmp["input_mode"] == "memory"].iloc[0]
    assert r["jpeg"] is jpeg["judged"] and r["memory"] is mem["judged"]
    assert r["shift"] == pytest.approx(jpeg["ratio"] / mem["ratio"])


def test_the_report_has_the_section_its_verdicts_and_its_figure(recorded_report, data, cmp):
    paths = recorded_report(RUN.name)
    md = paths.markdown.read_text()
    assert f"## {TITLE}" in md and "input_cpu.png" in md
    assert (paths.figures_dir / "input_cpu.png").is_file()
    section = md.split(f"## {TITLE}")[1].split("\n## ")[0]
    for _, r in per_library(data, 0.05).iterrows():
        assert r["judged"].text() in section
    for _, r in pair_verdicts(cmp).iterrows():
        assert r["jpeg"].text() in section and r["memory"].text() in section
    doc = json.loads(paths.verdicts.read_text())  # tools tell the pipelines apart
    assert sorted(a["input"] for a in doc["answers"]) == ["jpeg", "memory"]
    assert sorted(p["input"] for p in doc["pairs"]) == ["jpeg", "memory"]
    titles = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    before = titles[titles.index(TITLE) - 1]  # beside the throughput it explains
    assert before == ("Cost" if "Cost" in titles else "Throughput and scaling")


def test_a_run_without_the_host_pipeline_has_no_section(recorded_report):
    md = recorded_report("cpu-small").markdown.read_text()
    assert f"## {TITLE}" not in md

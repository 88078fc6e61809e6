""""Where the step goes" built from a REAL recorded run, checked against the raw files.

tests/fixtures/runs/cpu-why was produced on this project's 2-core CPU machine by

    hvd-vs-ddp run --backends ddp-gloo,ddp-mpi,horovod --world-sizes 2 --workloads mlp \
        --repeat 1 --suite-args "--rounds 3 --steps-per-round 2 --warmup-steps 1 \
        --convergence-steps 5 --max-bytes 65536" --name cpu-why --runs-dir tests/fixtures/runs

(DDP statistics in every DDP throughput result; one instrumented Horovod timeline cell
per controller, its trace beside its results). Torch-free.

    python -m pytest tests/unit/test_why_report.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.reports.sections.why.steps import where_step_goes
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-why"


@pytest.fixture(scope="module")
def why():
    return where_step_goes(build_frames([load_run(RUN)]))


def _raw(cell: str) -> dict:
    doc = json.loads((RUN / "cells" / f"{cell}.json").read_text())
    return next(b["extra_info"] for b in doc["benchmarks"]
                if b["extra_info"]["kind"] == "throughput")


def test_every_backend_has_its_own_figures_beside_the_subtraction(why):
    rows = why.steps.set_index("series")
    assert set(rows["source"]) == {"DDP's own statistics", "Horovod's timeline"}
    assert {"ddp-gloo", "ddp-mpi", "horovod (gloo)", "horovod (mpi)"} <= set(rows["label"])
    assert rows["sub_lo"].le(rows["sub_exposed_s"]).all()
    assert rows["sub_exposed_s"].le(rows["sub_hi"]).all()


@pytest.mark.parametrize("cell, label", [("ddp-gloo-torchrun-np2", "ddp-gloo"),
                                         ("ddp-mpi-mpirun-np2", "ddp-mpi")])
def test_ddp_figures_are_the_medians_of_its_raw_statistics(why, cell, label):
    st = _raw(cell)["ddp_stats"]
    ends = np.array([r["backward_compute_end_ns"] for r in st["ranks"]], dtype=np.int64)
    last = ends.argmax(axis=0)  # per step: the rank that finished backward last
    comm = np.array([r["backward_comm_s"] for r in st["ranks"]])[last, np.arange(last.size)]
    over = np.array([r["overlap_s"] for r in st["ranks"]])[last, np.arange(last.size)]
    exposed = np.clip(comm - over, 0, None)
    row = why.steps[why.steps["label"] == label].iloc[0]
    assert row["own_comm_s"] == pytest.approx(np.median(comm))
    assert row["own_exposed_s"] == pytest.approx(np.median(exposed))
    assert row["own_hidden_s"] <= row["own_comm_s"]
    inside = row["sub_lo"] <= row["own_exposed_s"] <= row["sub_hi"]
    assert (row["disagreement"] == "agrees") == inside
    if not inside:
        assert "ms vs the subtraction's" in row["disagreement"]


def test_ddp_stragglers_wait_for_the_last_rank(why):
    st = _raw("ddp-gloo-torchrun-np2")["ddp_stats"]
    ends = np.array([r["backward_compute_end_ns"] for r in st["ranks"]], dtype=np.int64)
    want = np.median((ends.max(axis=0) - ends) / 1e9, axis=1)  # per rank
    got = why.stragglers[why.stragglers["series"].str.startswith("ddp-gloo")]
    assert list(got["rank"]) == [0, 1]
    assert got["wait_s"].to_numpy() == pytest.approx(want)


def test_buckets_beside_fusion(why):
    lay = why.layout.set_index("series")
    ddp = lay[lay["mechanism"] == "DDP buckets"]
    hvd = lay[lay["mechanism"] == "Horovod fusion"]
    assert (ddp["limit"] == 25 * 2**20).all() and (hvd["limit"] == 128 * 2**20).all()
    st = _raw("ddp-gloo-torchrun-np2")["ddp_stats"]
    assert ddp.loc[ddp.index.str.startswith("ddp-gloo"), "largest_group_bytes"].iloc[0] \
        == max(st["bucket_sizes"])
    assert (hvd["groups_per_step"] >= 1).all()


def test_the_report_shows_the_section_and_figure(recorded_report):
    paths = recorded_report(RUN.name)
    html = paths.html.read_text()
    assert "Where the step goes" in html and "Stragglers at the gradient exchange" in html
    assert "DDP buckets next to Horovod tensor fusion" in html
    assert (paths.figures_dir / "where_step_goes.png").stat().st_size > 10_000

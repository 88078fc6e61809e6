"""The report's Cost section (hvd_vs_ddp/reports/cost.py) over recorded runs: device-hours per epoch
and cost per million samples follow from the measured samples/s and devices, their
intervals from the same bootstrap as the verdicts, energy per sample from the monitor's
GPU energy, and the CLI's options refused when bad (tests/bad_inputs.py has the cases).

    .venv/bin/python -m pytest tests/unit/test_cost.py
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from hvd_vs_ddp.reports import build_report, cost
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


@pytest.fixture(scope="module")
def data():
    return build_frames([load_run(RUNS / "cpu-repeats")])


def test_device_hours_and_price_follow_throughput(data):
    cf = cost.cost_frame(data.throughput, data.throughput_reps, price=3.0, epoch_samples=1000)
    assert len(cf) == len(data.throughput) > 0
    for _, r in cf.iterrows():
        assert r["devices"] == r["world_size"]
        assert r["device_hours_epoch"] == pytest.approx(r["devices"] * 1000 / r["sps"] / 3600)
        assert r["cost_per_m"] == pytest.approx(3.0 * r["devices"] * 1e6 / r["sps"] / 3600)
        # a faster end of the interval costs less: the intervals are inverted throughput's
        assert r["sps_lo"] <= r["sps"] <= r["sps_hi"]
        assert r["cost_per_m_lo"] <= r["cost_per_m"] <= r["cost_per_m_hi"]
        assert r["device_hours_epoch_lo"] <= r["device_hours_epoch"] <= r["device_hours_epoch_hi"]
        assert math.isnan(r["energy_j_per_sample"])  # recorded on a CPU machine


def test_interval_includes_run_to_run_variation(data):
    """With repetitions the interval is wider than one repetition's own steps give."""
    r = data.throughput.iloc[0]
    assert r["n_reps"] >= 2
    lo, hi = cost.sps_interval(r)
    one = r.copy()
    one["rep_samples"] = [r["rep_samples"][0]]
    lo1, hi1 = cost.sps_interval(one)
    assert hi / lo > 1 and (hi - lo) != pytest.approx(hi1 - lo1)


def test_no_price_no_cost_columns(data):
    cf = cost.cost_frame(data.throughput, data.throughput_reps)
    assert "cost_per_m" not in cf.columns
    table = cost.cost_table(cf)
    assert "cost per 1M samples [95%]" not in table.df.columns
    assert "--price-per-device-hour" in table.note
    assert "energy per sample (J)" not in table.df.columns  # no GPU energy recorded


def test_energy_per_sample_from_gpu_energy():
    rep = pd.Series({"global_batch": 16, "n_steps": 10,
                     "monitor": {"ranks": [{"rank": 0, "gpu_energy_j": 40.0},
                                           {"rank": 1, "gpu_energy_j": 24.0}]}})
    assert cost.energy_per_sample(rep) == pytest.approx(64.0 / 160)
    rep["monitor"] = {"ranks": [{"rank": 0, "gpu_energy_j": 40.0},
                                {"rank": 1, "gpu_energy_j": None}]}
    assert math.isnan(cost.energy_per_sample(rep))  # a rank without the counter: unknown


def test_dataparallel_counts_its_gpus():
    assert cost.devices(pd.Series({"world_size": 1, "backend_meta": {"dp_devices": 4}})) == 4
    assert cost.devices(pd.Series({"world_size": 1, "backend_meta": {"dp_devices": 0}})) == 1
    assert cost.devices(pd.Series({"world_size": 2, "backend_meta": {}})) == 2


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "x", ""])
def test_bad_price_refused(bad):
    with pytest.raises(ValueError, match="--price-per-device-hour"):
        cost.check_price(bad)


@pytest.mark.parametrize("bad", ["0", "-1", "2.5", "1e6", "x", ""])
def test_bad_epoch_refused(bad):
    with pytest.raises(ValueError, match="--epoch-samples"):
        cost.check_epoch_samples(bad)


def test_report_section_and_verdicts_json(tmp_path):
    paths = build_report([RUNS / "cpu-repeats"], tmp_path / "r" / "report.html",
                         price_per_device_hour=2.0, epoch_samples=50_000)
    md = paths.markdown.read_text()
    assert "## Cost" in md and "at 2 per device-hour" in md and "50,000 samples" in md
    doc = json.loads(paths.verdicts.read_text())
    assert doc["cost"] and all(c["price_per_device_hour"] == 2.0 for c in doc["cost"])
    assert all(c["energy_j_per_sample"] is None for c in doc["cost"])

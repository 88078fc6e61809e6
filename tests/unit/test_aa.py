"""The A/A check (hvd_vs_ddp/reports/aa.py) on REAL recorded repetitions
(tests/fixtures/runs/cpu-repeats: 6 repetitions per cell, recorded as
tests/unit/test_calibration.py says): every series with 4+ repetitions becomes one A/A
pair, arm A its odd rounds and arm B its even ones, judged by the report's own code;
numbers recomputed here from the pooled steps with numpy.

    python -m pytest tests/unit/test_aa.py -q
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hvd_vs_ddp.reports import aa
from hvd_vs_ddp.reports.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-repeats"


def test_every_series_is_split_by_round():
    data = build_frames([load_run(RUN)])
    df = aa.aa_pairs(data)
    assert len(df) == len(data.throughput) == 10
    assert set(df["reps"]) == {"3+3"}
    for (_, row), (_, tp) in zip(df.iterrows(), data.throughput.iterrows()):
        reps = tp["rep_samples"]
        want = np.median(np.concatenate(reps[0::2])) / np.median(np.concatenate(reps[1::2]))
        assert row["ratio"] == want and row["lo"] <= row["hi"]
        assert row["false"] == (row["verdict"] == "faster")
    assert aa.summary(df)[0].startswith("A/A pairs: 10; false 'faster': ")


def test_upper_bound_of_a_rate():
    assert aa.upper_bound(0, 20) == np.float64(aa.upper_bound(0, 20))
    assert 0.13 < aa.upper_bound(0, 20) < 0.145     # 1 - 0.05 ** (1/20) = 0.139
    assert aa.upper_bound(1, 20) > aa.upper_bound(0, 20)

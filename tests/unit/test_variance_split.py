"""The variance split (hvd_vs_ddp/run_model/variance.py) recovers known parts, and
verdicts.json carries it per throughput cell of a recorded run.

    pytest tests/unit/test_variance_split.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.reports.answer import variance_split
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.variance import split

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


@pytest.mark.parametrize("between, within", [(0.05, 0.02), (0.0, 0.03), (0.1, 0.0001)])
def test_known_parts_are_recovered(between, within):
    rng = np.random.default_rng(7)
    reps = [np.exp(5 + rng.normal(0, between) + rng.normal(0, within, 12))
            for _ in range(300)]
    v = split(reps)
    assert v is not None and v.repetitions == 300 and v.steps == 12
    assert v.within_sd == pytest.approx(within, rel=0.05)
    assert v.between_sd == pytest.approx(between, abs=0.01)
    expect = between ** 2 / (between ** 2 + within ** 2 / 12)
    # with no true between part the estimate is noise of the order within^2/steps
    assert v.between_share == pytest.approx(expect, abs=0.05 if between else 0.3)


def test_too_little_to_split_is_none():
    assert split([[1.0, 2.0]]) is None and split([[1.0], [2.0]]) is None


def test_verdicts_json_splits_every_repeated_cell():
    data = build_frames([load_run(RUNS / "cpu-repeats")])
    rows = variance_split(data)
    assert len(rows) == len(data.throughput) and rows
    for r in rows:
        assert r["repetitions"] == 6 and 0 <= r["between_share"] <= 1
        assert r["between_sd"] >= 0 and r["within_sd"] > 0

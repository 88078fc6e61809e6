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


def test_steps_that_pay_follow_kalibera_and_jones():
    """n* = sqrt((process cost / step cost) (within^2 / between^2)): processes that differ
    a lot ask for few steps each, costly processes for many; checked against a brute
    search of the cost-variance product over n."""
    from hvd_vs_ddp.run_model.variance import VarianceSplit, steps_that_pay

    def product(v, n, c1, c2):  # variance of the mean x cost, for a fixed budget
        return (v.between_sd ** 2 + v.within_sd ** 2 / n) * (c1 + n * c2)

    for between, within, c1, c2 in [(0.10, 0.05, 20.0, 0.2), (0.01, 0.08, 20.0, 0.2),
                                    (0.05, 0.05, 2.0, 1.0), (0.2, 0.02, 30.0, 0.5)]:
        v = VarianceSplit(3, 10, between, within, 0.5)
        n = steps_that_pay(v, c1, c2)
        best = min(range(1, 5000), key=lambda k: product(v, k, c1, c2))
        assert abs(n - best) <= 1, (between, within, c1, c2, n, best)
    assert steps_that_pay(VarianceSplit(3, 10, 0.0, 0.05, 0.0), 20, 0.2) == 1000

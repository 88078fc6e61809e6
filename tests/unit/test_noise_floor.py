"""The noise floor's arithmetic: the host probe's summary (scripts/noise_floor.py) and the
repetitions an A/A pair needs for "equivalent" at a given spread of a repetition's mean
(hvd_vs_ddp/run_model/variance.py, which the report's variance table and the script
print), checked against the report's own interval on simulated repetitions.

    python -m pytest tests/unit/test_noise_floor.py -q
"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN, EQUIVALENT, classify
from hvd_vs_ddp.run_model.stats import ratio_ci
from hvd_vs_ddp.run_model.variance import reps_for_equivalence, split

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("noise_floor", ROOT / "scripts" / "noise_floor.py")
noise_floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(noise_floor)


def test_host_summary_reads_spread_range_and_ramp():
    steady = np.full(40, 100.0)
    s = noise_floor.host_summary(steady)
    assert s["sd_log"] == 0 and s["range"] == 1 and s["ramp"] == 1
    ramped = np.r_[np.full(10, 60.0), np.full(30, 100.0)]   # the first 5 s at 0.6
    r = noise_floor.host_summary(ramped)
    assert r["ramp"] == pytest.approx(0.6) and r["sd_log"] > 0.2 and r["range"] > 1.6


def test_host_summary_reads_how_long_the_hosts_states_last():
    """A slowly wandering capacity (an AR(1) with a 0.9 step) keeps its deviation from
    one window to the next; independent windows share none of it."""
    rng = np.random.default_rng(5)
    slow = np.zeros(400)
    for i in range(1, 400):
        slow[i] = 0.9 * slow[i - 1] + rng.normal(0, 0.05)
    a = noise_floor.host_summary(np.exp(slow) * 100)["autocorr"]
    b = noise_floor.host_summary(np.exp(rng.normal(0, 0.1, 400)) * 100)["autocorr"]
    assert a[0.5] > 0.7 and a[10.0] < a[2.0] < a[0.5]
    assert all(abs(c) < 0.2 for c in b.values())


def test_reps_for_equivalence_grows_with_the_square_of_the_spread():
    assert reps_for_equivalence(0.0) == 2
    n1, n2 = reps_for_equivalence(0.05), reps_for_equivalence(0.10)
    assert n2 == pytest.approx(4 * n1, rel=0.1)
    assert reps_for_equivalence(0.10) == math.ceil(
        math.pi * (0.10 * (1.96 + 0.674) / math.log(1.05)) ** 2)


@pytest.mark.parametrize("sd", [0.04, 0.06])
def test_that_many_repetitions_let_the_report_say_equivalent(sd):
    """At the count it gives, an A/A pair whose repetitions spread by `sd` (and whose
    steps agree) is judged "equivalent" by the report's own interval about half the time
    (40 pairs: at least 30%); at a quarter of it, rarely."""
    n = reps_for_equivalence(sd)
    rng = np.random.default_rng(7)

    def share(reps: int, trials: int = 40) -> float:
        hits = 0
        for _ in range(trials):
            a, b = ([[math.exp(x)] * 5 for x in rng.normal(0, sd, reps)] for _ in "ab")
            ci = ratio_ci(a, b, resamples=400)
            hits += classify(ci.lo, ci.hi, DEFAULT_MARGIN) == EQUIVALENT
        return hits / trials

    assert share(n) >= 0.3
    assert share(max(2, n // 4)) <= 0.2


def test_a_repetitions_spread_counts_its_steps():
    """repetition_sd: the between part plus the step-to-step part over the steps; the
    script reads it from verdicts.json's form."""
    rng = np.random.default_rng(3)
    reps = [np.exp(rng.normal(m, 0.1, 10)) for m in rng.normal(0, 0.05, 8)]
    v = split(reps)
    assert v.repetition_sd == pytest.approx(math.hypot(v.between_sd, v.within_sd / math.sqrt(10)))
    assert noise_floor.rep_sd(v.as_json()) == pytest.approx(v.repetition_sd, rel=1e-4)

"""Calibration of the report's intervals on REAL recorded repetitions.

The fixture tests/fixtures/runs/cpu-repeats was recorded on this project's 2-core CPU
machine on 2026-11-22 while other engineers' jobs loaded it (load average 6-8), by

    hvd-vs-ddp run --repeat 6 --order-seed 13 --backends ddp-gloo,horovod \
        --world-sizes 1,2 --workloads mlp,gpt --runs-dir tests/fixtures/runs \
        --name cpu-repeats --suite-args "--rounds 5 --steps-per-round 2 \
        --warmup-steps 2 --convergence-steps 5 --max-bytes 65536"

(1.4 MB, kept as recorded). Its numbers vary wildly between repetitions (mlp at 1 rank:
72 to 1243 samples/s for one backend): that is the machine's contention, recorded.
Every pair of throughput series measured on the same case and world size is split
in every way into two halves of 3 repetitions (the same repetitions, i.e. rounds, on
both sides): the 95% interval from one half should contain the other half's ratio.
Normal theory puts that at about 83% (two independent estimates of equal variance);
the test asks for at least 75%. Measured: 86.2% of 160 splits (8 pairs x 20 splits);
82.5% without the small-sample widening (hvd_vs_ddp/run_model/stats.py); the step-only bootstrap
of the earlier reports 52.5% (the issue measured 54% between whole runs).

    python -m pytest tests/unit/test_calibration.py -q
    python -m tests.unit.test_calibration        # prints the coverage, both methods
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.frames import CASE_KEY, build_frames
from hvd_vs_ddp.run_model.load import load_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-repeats"
REPEAT, HALF = 6, 3


def _pairs():
    tp = build_frames([load_run(RUN)]).throughput
    for _, g in tp.groupby(CASE_KEY + ["world_size"]):
        for (_, a), (_, b) in itertools.combinations(g.iterrows(), 2):
            yield f"{a['case']} np{a['world_size']} {a['series']}/{b['series']}", \
                a["rep_samples"], b["rep_samples"]


def _pooled_ratio(a, b) -> float:
    return float(np.median(np.concatenate(a)) / np.median(np.concatenate(b)))


def coverage(method: str = "two-level") -> tuple[float, int, list[str]]:
    """Share of (pair, split) where half A's interval holds half B's ratio."""
    hits, total, lines = 0, 0, []
    for name, a, b in _pairs():
        assert len(a) == len(b) == REPEAT, name
        mine = 0
        for idx in itertools.combinations(range(REPEAT), HALF):
            rest = [i for i in range(REPEAT) if i not in idx]
            ha, hb = [a[i] for i in idx], [b[i] for i in idx]
            if method == "steps-only":   # the old interval: steps pooled, one level
                ha, hb = [np.concatenate(ha)], [np.concatenate(hb)]
            ci = stats.ratio_ci(ha, hb)
            other = _pooled_ratio([a[i] for i in rest], [b[i] for i in rest])
            mine += ci.contains(other)
            total += 1
        hits += mine
        lines.append(f"{name}: {mine}/20")
    return hits / total, total, lines


def test_two_level_interval_covers_the_other_half():
    cov, n, lines = coverage()
    assert n >= 100, n
    assert cov >= 0.75, f"coverage {cov:.0%} over {n} splits: " + "; ".join(lines)


def test_small_sample_correction_on_simulated_repetitions():
    """Constructed (not measured): log-normal levels per repetition (sd 3%) and steps
    (sd 2%), 3 + 3 repetitions of 10 steps, true ratio 1. Without the sqrt(R/(R-1))
    widening the interval is too narrow; with it, coverage of the other half's ratio
    is near the 83% of normal theory."""
    rng = np.random.default_rng(2026)

    def side():
        return [100 * np.exp(rng.normal(0, 0.03) + rng.normal(0, 0.02, 10)) for _ in range(6)]
    hits = {True: 0, False: 0}
    trials = 120
    for t in range(trials):
        a, b = side(), side()
        other = _pooled_ratio(a[3:], b[3:])
        for corr in hits:
            hits[corr] += stats.ratio_ci(a[:3], b[:3], resamples=1000, seed=t,
                                         correct=corr).contains(other)
    assert hits[True] / trials >= 0.75 and hits[True] > hits[False], hits


def test_step_only_interval_is_worse_on_the_same_data():
    """Run-to-run variation exists in the fixture: ignoring it covers less."""
    assert coverage("steps-only")[0] < coverage()[0]


if __name__ == "__main__":
    for m in ("two-level", "steps-only"):
        c, n, per = coverage(m)
        print(f"{m}: {c:.1%} of {n} splits")
        for line in per:
            print("   ", line)

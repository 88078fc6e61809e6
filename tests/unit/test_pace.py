"""The pace adjustment and its gate (hvd_vs_ddp/run_model/pace.py), on synthetic runs.

Each synthetic process has a pace it keeps for life (log sd PACE_SD); its probes see
that pace with a little noise, and its samples/s move with it. Horovod and DDP arms
are series of the same run; the library's true effect and what it does to the probe
are set per test:

- a library that leaves the probe alone: the gate passes, the adjusted interval is
  narrower and still holds the true ratio;
- a library that slows the probe beside its own threads (the treatment moves the
  covariate): the gate refuses, the verdict keeps the unadjusted reading, and with
  the gate forced open the adjustment would erase a real 22% difference;
- no probes (a run from before them): one reading, unadjusted, saying why.

    python -m pytest tests/unit/test_pace.py -q
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hvd_vs_ddp.run_model import pace, stats, verdicts

PACE_SD = 0.08     # between processes, as measured on the developers' guest
PROBE_SD = 0.004   # the probe's own noise
STEP_SD = 0.02     # step to step inside a process


def _process(rng, effect: float, probe_moved: float, steps: int = 10, ranks: int = 2):
    """One repetition: its samples/s per step and its pace probe record."""
    p = rng.normal(0, PACE_SD)
    sps = 40 * np.exp(p + effect + rng.normal(0, STEP_SD, steps))
    probe = {"unit": "products/s",
             "pre_products": 800, "post_products": 120,
             "ranks": [{"pre": float(800 * math.exp(p + rng.normal(0, PROBE_SD))),
                        "post": [float(800 * math.exp(p + probe_moved
                                                      + rng.normal(0, PROBE_SD)))
                                 for _ in range(3)],
                        "threads": 1, "process": {}} for _ in range(ranks)]}
    return sps, probe


def _row(label: str, reps: list, probes: list, case: str = "gpt") -> dict:
    return {"run": "synthetic", "label": label, "series": label, "world_size": 2,
            "case": case, "rep_samples": [r for r in reps], "samples": np.concatenate(reps),
            "rep_pace_probe": probes, "cell_id": label}


def _frame(seed: int, n: int, hvd_effect: float, hvd_probe_moved: float,
           cases: int = 3) -> pd.DataFrame:
    """Horovod and DDP series over `cases` workloads, n repetitions each."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(cases):
        for label, effect, moved in (("horovod (gloo)", hvd_effect, hvd_probe_moved),
                                     ("ddp-gloo", 0.0, 0.0)):
            reps, probes = zip(*(_process(rng, effect, moved) for _ in range(n)))
            rows.append(_row(label, list(reps), list(probes), case=f"w{c}"))
    return pd.DataFrame(rows)


def _pair(tp: pd.DataFrame, case: str = "w0") -> pace.Reading:
    thetas = pace.fit_thetas(tp)
    h = tp[(tp["case"] == case) & (tp["label"] == "horovod (gloo)")].iloc[0]
    d = tp[(tp["case"] == case) & (tp["label"] == "ddp-gloo")].iloc[0]
    return pace.reading(pace.arm(h), pace.arm(d), thetas)


def test_the_probe_explains_the_pace_and_the_adjustment_narrows_the_interval():
    tp = _frame(1, 6, hvd_effect=0.0, hvd_probe_moved=0.0)
    thetas = pace.fit_thetas(tp)
    assert set(k[1] for k in thetas) == {"horovod (gloo)", "ddp-gloo"}
    for t in thetas.values():
        assert 0.7 < t.value < 1.3 and t.rho > 0.8
        assert t.sd_after < t.sd_before / 2
    r = _pair(tp)
    assert r.gate.passed and r.reading == pace.ADJUSTED and r.ci.adjusted
    width = math.log(r.ci.hi / r.ci.lo)
    assert width < math.log(r.unadjusted.hi / r.unadjusted.lo) / 2
    assert r.ci.lo <= 1.0 <= r.ci.hi  # the truth (no difference) is still inside
    assert r.unadjusted.adjusted is False  # both readings kept


def test_a_library_that_moves_the_probe_is_refused_by_the_gate(monkeypatch):
    """Horovod truly 22% slower (ratio 0.78), and its thread slows the probe after the
    rounds as much: the adjusted reading would take part of the real difference out. The
    gate refuses it: the verdict stays on the unadjusted reading, which holds the truth."""
    tp = _frame(2, 6, hvd_effect=-0.25, hvd_probe_moved=-0.25)
    r = _pair(tp)
    assert not r.gate.passed and r.reading == pace.UNADJUSTED
    assert r.ci == r.unadjusted and r.adjusted is not None
    assert "not within" in r.gate.text and r.why.startswith("unadjusted")
    truth = math.exp(-0.25)
    v = verdicts.judge(r.ci, 0.05, 2, "horovod (gloo)", "ddp-gloo")
    assert v.verdict == verdicts.FASTER and v.faster == "ddp-gloo" and r.ci.contains(truth)
    # the mutation: with the gate forced open the adjustment moves the ratio off the
    # truth by half the difference (the post probe is half the pace), confidently
    monkeypatch.setattr(pace, "PACE_MARGIN", 1.0)
    forced = _pair(tp)
    assert forced.reading == pace.ADJUSTED and not forced.ci.contains(truth)
    assert forced.ci.lo > truth * 1.05


def test_a_probe_moved_before_the_library_starts_is_refused_too():
    """The launcher's start-up slowing only the pre probe moves the drift as well."""
    rng = np.random.default_rng(3)
    rows = []
    for label, pre_moved in (("horovod (gloo)", -0.05), ("ddp-gloo", 0.0)):
        reps, probes = [], []
        for _ in range(6):
            sps, probe = _process(rng, 0.0, 0.0)
            for rk in probe["ranks"]:
                rk["pre"] *= math.exp(pre_moved)
            reps.append(sps)
            probes.append(probe)
        rows.append(_row(label, reps, probes, case="w0"))
    r = _pair(pd.DataFrame(rows))
    assert not r.gate.passed and r.reading == pace.UNADJUSTED


def test_without_probes_the_pair_keeps_one_unadjusted_reading():
    tp = _frame(4, 4, 0.0, 0.0)
    tp["rep_pace_probe"] = [[None] * 4 for _ in range(len(tp))]
    r = _pair(tp)
    assert r.reading == pace.UNADJUSTED and r.adjusted is None
    assert "no pace coefficient" in r.why and "no pace probe" in r.gate.text


def test_a_pair_with_one_unprobed_repetition_keeps_one_reading():
    tp = _frame(8, 5, 0.0, 0.0)
    tp.at[0, "rep_pace_probe"] = [None] + list(tp.at[0, "rep_pace_probe"][1:])
    r = _pair(tp)
    assert r.reading == pace.UNADJUSTED and r.adjusted is None
    assert r.why == "unadjusted: not every repetition was probed"


def test_zero_shifts_leave_the_interval_as_it_was():
    rng = np.random.default_rng(5)
    a = [list(40 + rng.normal(0, 1, 10)) for _ in range(4)]
    b = [list(42 + rng.normal(0, 1, 10)) for _ in range(4)]
    zero = stats.Shift(np.zeros(4), np.zeros((stats.N_RESAMPLES, 4)))
    plain, shifted = stats.ratio_ci(a, b), stats.ratio_ci(a, b, shifts=(zero, zero))
    assert (plain.ratio, plain.lo, plain.hi) == pytest.approx(
        (shifted.ratio, shifted.lo, shifted.hi), rel=1e-12)
    assert shifted.adjusted and not plain.adjusted


def test_the_budget_reads_the_sequential_interval_of_the_adjusted_reading():
    tp = _frame(6, 6, 0.0, 0.0)
    thetas = pace.fit_thetas(tp)
    h, d = (tp[(tp["case"] == "w0") & (tp["label"] == lab)].iloc[0]
            for lab in ("horovod (gloo)", "ddp-gloo"))
    plan = {"planned": 3, "max_reps": 9}
    r = pace.reading(pace.arm(h), pace.arm(d), thetas, plan)
    assert r.ci.look == 4 and r.ci.adjusted and r.unadjusted.look == 4


def test_probe_figures_from_a_record():
    probe = {"ranks": [{"pre": 100.0, "post": [90.0, 110.0, 100.0]},
                       {"pre": 200.0, "post": [200.0, 200.0, 200.0]}]}
    assert pace.log_pace(probe) == pytest.approx((math.log(100) + math.log(200)) / 2)
    assert pace.drifts(probe) == pytest.approx(
        [(math.log(0.9) + 0) / 2, (math.log(1.1) + 0) / 2, 0.0])
    assert math.isnan(pace.log_pace(None)) and pace.drifts({"ranks": []}) is None


def test_the_compute_only_references_get_their_own_kind():
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(5):
        sps, probe = _process(rng, 0.0, 0.0)
        rows.append({"run": "synthetic", "ranks": 2, "workload": "gpt", "knobs": "{}",
                     "per_rank_batch": 8, "steps": 8 / sps, "pace_probe": probe})
    (kind, theta), = pace.compute_only_thetas(pd.DataFrame(rows)).items()
    assert kind == ("synthetic", "compute-only", 2) and theta.rho > 0.8
    assert [k["kind"] for k in pace.kinds_table(pd.DataFrame(), pd.DataFrame(rows))] == [
        ["compute-only", 2]]


def test_the_probe_switched_off_records_nothing(monkeypatch):
    """HVD_VS_DDP_PACE_PROBE=off: no probe in the process, no pace_probe in its records
    (the verdicts then keep the unadjusted reading); on: both probes and the counters."""
    from hvd_vs_ddp.harness import pace as probe

    monkeypatch.setattr(probe, "PRE_PRODUCTS", 5)
    monkeypatch.setattr(probe, "POST_PRODUCTS", 5)
    monkeypatch.setenv(probe.SWITCH, "off")
    off = probe.PaceLog()
    assert off.run_pre() is None and off.rank_summary({}) is None
    assert probe.record([off.rank_summary({})]) is None
    monkeypatch.setenv(probe.SWITCH, "on")
    on = probe.PaceLog()
    assert on.run_pre() > 0
    rank = on.rank_summary(probe.counters())
    assert rank is not None and len(rank["post"]) == probe.POST_PROBES
    assert set(rank["process"]) >= {"nonvoluntary_switches", "run_delay_s"}
    assert probe.record([rank])["ranks"] == [rank]


def test_the_pre_probe_waits_for_settle_only_where_it_runs(monkeypatch):
    """The suites hand run_pre a gather of every rank (suites/conftest.py): it is called
    before the probe where the probe runs, and not at all where it is switched off."""
    from hvd_vs_ddp.harness import pace as probe

    monkeypatch.setattr(probe, "PRE_PRODUCTS", 5)
    calls: list[str] = []
    monkeypatch.setattr(probe, "probe", lambda n: calls.append("probe") or 1.0)
    monkeypatch.setenv(probe.SWITCH, "off")
    assert probe.PaceLog().run_pre(settle=lambda: calls.append("settle")) is None
    assert calls == []
    monkeypatch.setenv(probe.SWITCH, "on")
    assert probe.PaceLog().run_pre(settle=lambda: calls.append("settle")) == 1.0
    assert calls == ["settle", "probe"]

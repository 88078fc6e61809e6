"""The projection held to a link (hvd_vs_ddp/projection/links.py), on made-up cells: a
link's rate reaches the prediction as the transfer time it implies (half the rate, twice
the wire), the band spans no overlap to backward's, and the pair's predicted ratio is
held against the measured one.

    python -m pytest tests/unit/test_links_projection.py -q
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hvd_vs_ddp.projection import links as pl
from hvd_vs_ddp.run_model.frames import Data


def test_a_links_rate_reaches_the_prediction_as_its_transfer_time():
    ring = 95e6  # resnet50's gradients, 2 ranks
    one = pl.predict(0.5, 0.4, ring, "1gbit", efficiency=1.0)
    half = pl.predict(0.5, 0.4, ring, "500mbit", efficiency=1.0)
    assert one.high == pytest.approx(0.5 + 0.76)           # no overlap: the wire adds whole
    assert one.low == pytest.approx(0.4 + 0.76 - 0.4 * 2 / 3)  # hidden behind backward,
    #                                                   replacing the loopback transfer
    assert half.high - 0.5 == pytest.approx(2 * (one.high - 0.5))
    assert one.low <= one.point <= one.high
    slow = pl.predict(0.5, 0.4, ring, "1gbit", efficiency=0.5)
    assert slow.high - 0.5 == pytest.approx(2 * 0.76)     # TCP's share scales the wire
    fast = pl.predict(0.5, 0.4, 1e3, "4gbit")
    assert fast.low == pytest.approx(0.5)                  # a tiny model: nothing exposed


def _data(steps: dict[tuple[str, str], float]) -> Data:
    rows = []
    for (series, link), step in steps.items():
        lib = "horovod" if series.startswith("horovod") else "ddp"
        rows.append({"run": "r", "case": "resnet50" + ("" if link == "loopback"
                                                       else f" [link {link}]"),
                     "workload": "resnet50", "series": series, "library": lib,
                     "link": link, "world_size": 2, "per_rank_batch": 8,
                     "input_mode": "device", "step_median": step,
                     "wire": None if link == "loopback" else {"ring_bytes": 95e6}})
    co = pd.DataFrame([{"run": "r", "workload": "resnet50", "per_rank_batch": 8,
                        "input_mode": "device", "ranks": 2, "steps": np.array([0.4, 0.4])}])
    empty = pd.DataFrame()
    return Data(runs=[], cells=empty, throughput=pd.DataFrame(rows), compute_only=co,
                convergence=empty, tta=empty, collective=empty, memcpy=empty)


def test_cells_and_pairs_are_held_against_what_was_measured():
    data = _data({("ddp-gloo", "loopback"): 0.5, ("horovod (gloo)", "loopback"): 0.6,
                  ("ddp-gloo", "1gbit"): 1.1, ("horovod (gloo)", "1gbit"): 1.5})
    pred = pl.cells(data, efficiency=1.0)
    assert list(pred["series"]) == ["ddp-gloo", "horovod (gloo)"]
    ddp = pred[pred["series"] == "ddp-gloo"].iloc[0]
    assert ddp["wire_s"] == pytest.approx(0.76) and ddp["within"]
    assert ddp["error"] == pytest.approx(ddp["point_s"] / 1.1 - 1)
    cmp = pd.DataFrame([{"run": "r", "case": "resnet50 [link 1gbit]",
                         "horovod": "horovod (gloo)", "ddp": "ddp-gloo",
                         "ratio": 1.1 / 1.5, "lo": 0.7, "hi": 0.77}])
    held = pl.pairs(pred, cmp)
    assert len(held) == 1 and held.iloc[0]["link"] == "1gbit"
    r = held.iloc[0]
    assert r["predicted_lo"] <= r["predicted"] <= r["predicted_hi"]
    assert bool(r["held"]) == (r["predicted_lo"] <= 1.1 / 1.5 <= r["predicted_hi"])
    assert "held:" in pl.text(pred, held)


def _loopback_data(steps: dict[tuple[str, str], float]) -> Data:
    """_data with the columns a loaded run's frame has (case, workload_params)."""
    data = _data(steps)
    data.throughput["workload_params"] = "{}"
    return data


def test_a_run_that_never_crossed_a_link_is_projected_at_each_rate():
    """`project RUN --link-rate`: from the loopback and compute-only cells alone, each rate's
    wire is the gradient bytes over it (a ring of 2 sends them once), and a halved rate
    doubles it; nothing measured stands beside it."""
    data = _loopback_data({("ddp-gloo", "loopback"): 0.5, ("horovod (gloo)", "loopback"): 0.6})
    steps = pl.at_rates(data, ("500mbit", "1gbit"), efficiency=1.0,
                        grad_bytes=lambda d, r: 95e6)
    assert len(steps) == 4 and set(steps["link"]) == {"500mbit", "1gbit"}
    wire = steps.groupby("link")["wire_s"].first()
    assert wire["1gbit"] == pytest.approx(0.76) and wire["500mbit"] == pytest.approx(1.52)
    ddp = steps[(steps["series"] == "ddp-gloo") & (steps["link"] == "1gbit")].iloc[0]
    assert ddp["high_s"] == pytest.approx(0.5 + 0.76)   # loopback step + the wire, whole
    assert ddp["low_s"] == pytest.approx(0.4 + 0.76 - 0.4 * 2 / 3)
    assert np.isnan(ddp["measured_s"]) and ddp["within"] is None
    pairs = pl.predicted_pairs(steps, pd.DataFrame(), margin=0.05)
    assert len(pairs) == 2 and pairs["held"].isna().all()
    for _, p in pairs.iterrows():
        assert p["predicted_lo"] <= p["predicted"] <= p["predicted_hi"]


def test_the_band_gives_the_reports_verdict_and_a_measured_link_cell_is_held_against_it():
    # DDP much faster on loopback and the link short: the band lies below 1 / 1.05
    data = _loopback_data({("ddp-gloo", "loopback"): 0.45, ("horovod (gloo)", "loopback"): 1.2,
                           ("ddp-gloo", "4gbit"): 0.5, ("horovod (gloo)", "4gbit"): 1.25})
    data.throughput["case"] = ["resnet50"] * 2 + ["resnet50 [link 4gbit]"] * 2
    steps = pl.at_rates(data, ("4gbit",), efficiency=1.0, grad_bytes=lambda d, r: 95e6)
    assert len(steps) == 2 and steps["within"].notna().all()   # the run's own 4gbit cells
    assert list(steps["measured_s"]) == [0.5, 1.25]
    cmp = pd.DataFrame([{"run": "r", "case": "resnet50 [link 4gbit]",
                         "horovod": "horovod (gloo)", "ddp": "ddp-gloo",
                         "ratio": 0.5 / 1.25, "lo": 0.38, "hi": 0.42}])
    (p,) = pl.predicted_pairs(steps, cmp, margin=0.05).itertuples()
    assert p.verdict == "faster" and p.faster == "ddp" and p.predicted_hi < 1 / 1.05
    assert p.held == (p.predicted_lo <= 0.4 <= p.predicted_hi)
    # a margin whose edge (1 / 1.9) falls inside the band: inconclusive, no side named
    (q,) = pl.predicted_pairs(steps, cmp, margin=0.9).itertuples()
    assert q.predicted_lo < 1 / 1.9 < q.predicted_hi
    assert q.verdict == "inconclusive" and q.faster == ""


def test_project_link_rate_on_a_recorded_run_prints_a_labelled_projection(capsys):
    """The real command on a recorded quick run (loopback cells only): every 2-rank series
    of Horovod and DDP at each rate, the label first, a verdict per pair, exit 0."""
    from pathlib import Path

    from hvd_vs_ddp.cli import main as cli

    run = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-small"
    assert cli(["project", str(run), "--link-rate", "500mbit,1gbit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PROJECTION: predicted by a model")
    rows = [ln for ln in out.splitlines() if ln.startswith("mlp ")]
    assert len(rows) == 6 and sum(" 500mbit " in ln for ln in rows) == 3
    assert sum(ln.startswith("  mlp at ") for ln in out.splitlines()) == 4


def _with_reps(data: Data, loop_spread: float, compute_spread: float) -> Data:
    """`data` with three repetitions of ten steps each behind every median: the loopback
    series' repetitions `loop_spread` apart (as a share), the compute-only cell's
    `compute_spread` apart."""
    def reps(median: float, spread: float) -> list:
        return [list(median * (1 + spread * k) * np.linspace(0.99, 1.01, 10))
                for k in (-1, 0, 1)]
    tp = data.throughput
    tp["rep_steps"] = [reps(s, loop_spread) for s in tp["step_median"]]
    co = data.compute_only
    data.compute_only = pd.DataFrame([{**co.iloc[0].to_dict(), "steps": np.array(r)}
                                      for r in reps(0.4, compute_spread)])
    return data


def _ddp_1gbit(data: Data) -> pd.Series:
    steps = pl.at_rates(data, ("1gbit",), efficiency=1.0, grad_bytes=lambda d, r: 95e6)
    return steps[steps["series"] == "ddp-gloo"].iloc[0]


def test_the_band_carries_the_spread_of_the_repetitions_it_was_fitted_on():
    """A prediction interval, not the model's range alone: repetitions that agree leave
    the band at the range (from 'the link hides behind backward' to 'nothing overlaps');
    repetitions 20% apart widen it on both sides, and the same inputs give the same band."""
    loop = {("ddp-gloo", "loopback"): 0.5, ("horovod (gloo)", "loopback"): 0.6}
    bare = _ddp_1gbit(_loopback_data(loop))
    assert (bare["band_lo_s"], bare["band_hi_s"]) == (bare["low_s"], bare["high_s"])
    tight = _ddp_1gbit(_with_reps(_loopback_data(loop), 0.0, 0.0))
    assert tight["band_lo_s"] == pytest.approx(bare["low_s"], rel=0.02)
    assert tight["band_hi_s"] == pytest.approx(bare["high_s"], rel=0.02)
    wide = _ddp_1gbit(_with_reps(_loopback_data(loop), 0.2, 0.0))
    assert wide["band_lo_s"] < 0.95 * bare["low_s"] and wide["band_hi_s"] > 1.05 * bare["high_s"]
    assert wide["point_s"] == bare["point_s"]           # the point is the medians' own
    again = _ddp_1gbit(_with_reps(_loopback_data(loop), 0.2, 0.0))
    assert (again["band_lo_s"], again["band_hi_s"]) == (wide["band_lo_s"], wide["band_hi_s"])


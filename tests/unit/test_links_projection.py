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

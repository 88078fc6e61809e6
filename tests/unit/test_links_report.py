"""The report's "Across a link" section (hvd_vs_ddp/reports/links_section.py) on made-up
rows: a link's rate reaches the table as the time its ring bytes imply, rates sort
ascending with loopback last, and the faster library's change between adjacent rates is
named as the curves' crossing.

    python -m pytest tests/unit/test_links_report.py -q
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hvd_vs_ddp.reports import links_section as ls
from hvd_vs_ddp.run_model.frames import Data


def _tp_row(link: str, series: str, library: str, step: float, wire: dict | None) -> dict:
    case = "resnet50" + ("" if link == "loopback" else f" [link {link}]")
    return {"run": "r", "case": case, "series": series, "library": library, "link": link,
            "world_size": 2, "n_reps": 2, "step_median": step, "wire": wire}


def _data(tp: pd.DataFrame) -> Data:
    empty = pd.DataFrame()
    return Data(runs=[], cells=empty, throughput=tp, compute_only=empty, convergence=empty,
                tta=empty, collective=empty, memcpy=empty)


def test_a_links_rate_reaches_the_table_as_the_time_its_ring_bytes_take():
    ring = 95e6
    wire = {"tx_bytes_per_step": 1.05 * ring, "grad_bytes": ring, "ring_bytes": ring,
            "wire_over_ring": 1.05}
    tp = pd.DataFrame([_tp_row("1gbit", "ddp-gloo", "ddp", 1.0, wire),
                       _tp_row("loopback", "ddp-gloo", "ddp", 0.3, None),
                       _tp_row("500mbit", "ddp-gloo", "ddp", 1.8, wire)])
    exposed = pd.DataFrame([{"run": "r", "case": c, "series": "ddp-gloo", "world_size": 2,
                             "compute_s": 0.25} for c in tp["case"]])
    rows = ls.link_rows(_data(tp), exposed)
    assert list(rows["link"]) == ["500mbit", "1gbit", "loopback"]  # ascending, no wire last
    assert set(rows["workload"]) == {"resnet50"}
    one = rows[rows["link"] == "1gbit"].iloc[0]
    assert one["ring_wire_s"] == pytest.approx(0.76)
    assert rows[rows["link"] == "500mbit"].iloc[0]["ring_wire_s"] == pytest.approx(1.52)
    assert one["exposed"] == pytest.approx(0.75)
    assert np.isnan(rows[rows["link"] == "loopback"].iloc[0]["ring_wire_s"])
    table = ls.step_table(rows, multi=False).df
    assert list(table["ring at rate (ms)"])[:2] == ["1520.00", "760.00"]


def test_no_linked_cell_no_section():
    tp = pd.DataFrame([_tp_row("loopback", "ddp-gloo", "ddp", 0.3, None)])
    assert ls.link_rows(_data(tp), pd.DataFrame()).empty
    assert ls.links_section(_data(tp), pd.DataFrame(), pd.DataFrame(), 0.05) is None


def _pair(link: str, faster: str) -> dict:
    return {"run": "r", "workload": "resnet50", "horovod": "horovod (gloo)",
            "ddp": "ddp-gloo", "link": link, "faster": faster,
            "rate_bps": ls.bits_per_s(link)}


def test_the_curves_cross_where_the_faster_library_changes():
    pairs = pd.DataFrame([_pair("500mbit", "ddp-gloo"), _pair("1gbit", "ddp-gloo"),
                          _pair("4gbit", "horovod (gloo)"), _pair("loopback", "")])
    said = ls.crossings(pairs)
    assert said == ["resnet50, horovod (gloo) against ddp-gloo: the curves cross: "
                    "ddp-gloo at 1gbit, horovod (gloo) at 4gbit."]
    same = pd.DataFrame([_pair("500mbit", "ddp-gloo"), _pair("4gbit", "ddp-gloo")])
    assert "no crossing measured" in ls.crossings(same)[0]


def test_each_at_its_best_per_link():
    """A tune run across a link and on loopback: 'Each at its best' judges each link's
    cells apart (the recorded cpu-tune run, its cells copied as if across 1gbit)."""
    from pathlib import Path

    from hvd_vs_ddp.run_model import tuning_pairs
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.load import load_run

    data = build_frames([load_run(Path(__file__).parents[1] / "fixtures" / "runs"
                                  / "cpu-tune")])
    linked = data.throughput.copy()
    linked["link"] = "1gbit"
    linked["cell_id"] = linked["cell_id"] + "-link1gbit"
    linked["case"] = linked["case"] + " [link 1gbit]"
    linked["sps_median"] = linked["sps_median"] / 3  # slower: were it mixed, never crowned
    both = pd.concat([data.throughput, linked], ignore_index=True)
    entries = tuning_pairs.at_best(Data(**{**vars(data), "throughput": both}), 0.05)
    by = {e["workload"]: e for e in entries}
    assert sorted(by) == ["mlp", "mlp [link 1gbit]"]
    for side in ("best_ddp", "best_horovod"):
        assert by["mlp [link 1gbit]"][side]["cell"].endswith("-link1gbit")
        assert not by["mlp"][side]["cell"].endswith("-link1gbit")


def test_the_section_draws_step_time_against_the_rate():
    from hvd_vs_ddp.reports.figures import Figures

    wire = {"tx_bytes_per_step": 96e6, "grad_bytes": 95e6, "ring_bytes": 95e6,
            "wire_over_ring": 1.01}
    tp = pd.DataFrame([_tp_row(k, s, lib, step, None if k == "loopback" else wire)
                       for k, step in (("loopback", 0.7), ("1gbit", 1.1), ("500mbit", 2.0))
                       for s, lib in (("ddp-gloo", "ddp"), ("horovod (gloo)", "horovod"))])
    exposed = pd.DataFrame([{"run": "r", "case": c, "series": s, "world_size": 2,
                             "compute_s": 0.6} for c, s in zip(tp["case"], tp["series"])])
    figs = Figures()
    section = ls.links_section(_data(tp), pd.DataFrame(), exposed, 0.05, figs)
    assert section is not None and section.title == ls.TITLE
    assert figs.get("links_steps") in section.blocks

"""'Each at its best' over a tune run recorded here (hvd-vs-ddp run --preset tune
--workloads mlp --repeat 2 --suite-args "--rounds 3 --steps-per-round 4", 2 ranks;
in it ddp-gloo has no PowerSGD cell since it is refused over Gloo, and the sets that
change the maths carry the suite's loss check; paths scrubbed by
scripts/scrub_fixture_paths.py).

    python -m pytest tests/unit/test_tuning_report.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hvd_vs_ddp.harness.knobs import by_name
from hvd_vs_ddp.reports import tuning
from hvd_vs_ddp.reports.answer import verdicts_doc
from hvd_vs_ddp.reports.compare import add_scaling
from hvd_vs_ddp.reports.tables import Table
from hvd_vs_ddp.run_model import tuning_pairs
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

RUN = Path(__file__).parents[1] / "fixtures" / "runs" / "cpu-tune"


@pytest.fixture(scope="module")
def data():
    return build_frames([load_run(RUN)])


def test_one_entry_per_workload_and_world_size(data):
    (e,) = tuning_pairs.at_best(data, 0.05)
    assert (e["workload"], e["world_size"]) == ("mlp", 2)
    for side, prefix in (("best_horovod", "hvd-"), ("best_ddp", "ddp-")):
        best = e[side]
        assert best["repetitions"] == 2
        assert best["knob_set"] == "default" or best["knob_set"].startswith(prefix)
    for key in ("at_defaults", "at_best", "gain_horovod", "gain_ddp"):
        v = e[key]
        assert v["lo"] <= v["ratio"] <= v["hi"] and v["verdict"] in (
            "faster", "equivalent", "inconclusive")
    assert e["at_defaults"]["a"] == "horovod" and e["gain_ddp"]["b"] == "default"


def test_the_fastest_crowned_set_wins_and_the_others_are_listed(data):
    (e,) = tuning_pairs.at_best(data, 0.05)
    checks = pd.DataFrame(e["checks"])
    assert set(checks["knob_set"]) >= {"default", "hvd-autotune", "hvd-autotuned",
                                       "ddp-fp16-hook", "hvd-fp16", "host-sync"}
    assert not any(checks["knob_set"].str.startswith("ddp-powersgd"))  # refused over Gloo
    for side, lib in (("best_horovod", "horovod"), ("best_ddp", "ddp")):
        mine = checks[checks["series"].str.startswith(lib)]
        crowned = mine[(mine["ok"] == True) & mine["not_crowned"].isna()]  # noqa: E712
        assert e[side]["samples_per_s"] == crowned["samples_per_s"].max()
    never = checks[checks["knob_set"].isin(["hvd-autotune", "host-sync"])]
    assert never["not_crowned"].notna().all()
    assert {h["series"] for h in e["habits"]} == {"horovod (gloo)", "ddp-gloo"}


def test_fp16_is_checked_against_single_within_its_bound(data):
    """The suite's own loss check (hvd_vs_ddp/harness/loss_bound.py), as recorded."""
    (e,) = tuning_pairs.at_best(data, 0.05)
    checks = {c["knob_set"]: c for c in e["checks"]}
    for name in ("hvd-fp16", "ddp-fp16-hook"):
        c = checks[name]
        assert c["changes"] == "fp16 gradients" and c["against"] == "reference"
        assert c["bound"] == by_name(name).loss_bound and c["ok"] is True
        assert 0 <= c["excess"] < c["bound"]  # fp16 rounding only
    assert checks["ddp-bucket1mb"]["changes"] is None and checks["ddp-bucket1mb"]["ok"]
    notes = "\n".join(str(b) for b in tuning.section([e]).blocks[1:])
    assert "hvd-fp16" in notes and "within the set's bound of 0.01%" in notes, notes


def test_a_set_beyond_its_recorded_bound_is_never_crowned():
    row = pd.Series({"knobs": json.dumps({"compression": "fp16"}), "losses": [1.0, 1.0],
                     "loss_check": {"bound": 1e-4, "deviation": 2e-4, "within": False,
                                    "reference_losses": [1.0, 1.0]}})
    c = tuning_pairs.loss_check(row, None)
    assert c["ok"] is False and c["against"] == "reference" and c["excess"] == 2e-4


def _row(knobs, losses):
    return pd.Series({"knobs": json.dumps(knobs), "losses": losses})


def test_a_setting_that_trains_worse_is_never_crowned():
    default = _row({"compression": "none"}, [2.0, 1.0, 1.0, 1.0])
    assert tuning_pairs.loss_check(_row({"compression": "powersgd"}, [2.0, 1.0, 1.0, 1.0]),
                             default)["ok"] is True
    worse = tuning_pairs.loss_check(_row({"compression": "powersgd"}, [2.0, 1.0, 1.05, 1.05]),
                              default)
    assert worse["ok"] is False and worse["excess"] == pytest.approx(0.05)
    better = tuning_pairs.loss_check(_row({"adasum": True}, [2.0, 1.0, 0.9, 0.9]), default)
    assert better["ok"] is True and better["changes"] == "Adasum instead of an average"
    unchecked = tuning_pairs.loss_check(_row({"compression": "bf16"}, [1.0]), default)
    assert unchecked["ok"] is None


def test_section_and_verdicts_json(data):
    entries = tuning_pairs.at_best(data, 0.05)
    sec = tuning.section(entries)
    assert sec is not None and sec.title == "Each at its best"
    assert isinstance(sec.blocks[0], Table) and len(sec.blocks[0].df) == 1
    doc = verdicts_doc(data, hvd_vs_ddp(add_scaling(data.throughput)), 0.05)
    assert json.loads(json.dumps(doc["each_at_its_best"], default=str))[0]["workload"] == "mlp"


def test_runs_without_library_sets_have_no_section():
    other = build_frames([load_run(RUN.parent / "cpu-small")])
    assert tuning_pairs.at_best(other, 0.05) == [] and tuning.section([]) is None

"""The report's "Where the variance comes from" section (hvd_vs_ddp/reports/sections/
variance.py): one row per throughput series with 2+ repetitions, the same split as
verdicts.json's variance_split, and the A/A repetitions count from the run model.

    python -m pytest tests/unit/test_report_variance.py -q
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from types import SimpleNamespace

from hvd_vs_ddp.reports.answer import variance_split
from hvd_vs_ddp.reports.sections import variance
from hvd_vs_ddp.run_model.disturbed import leave_out_disturbed
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.variance import VarianceSplit, reps_for_equivalence

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


@cache
def _data(name: str):
    run = load_run(RUNS / name)
    leave_out_disturbed(run)
    return build_frames([run])


def _ctx(name: str, margin: float = 0.05):
    """What the section reads of the report's context (its data, margin and run count),
    without the figures report_context draws."""
    return SimpleNamespace(data=_data(name), margin=margin, multi=False)


def test_one_row_per_repeated_series_with_the_verdicts_json_split():
    ctx = _ctx("cpu-repeats")
    rows = variance_split(ctx.data)
    section = variance.build(ctx)
    assert section is not None and section.title == variance.TITLE
    df = section.blocks[0].df
    assert len(df) == len(rows) > 0
    for (_, shown), r in zip(df.iterrows(), rows):
        v = VarianceSplit.from_json(r)
        assert shown["backend"] == r["series"] and shown["reps"] == r["repetitions"]
        assert shown["between reps (sd)"] == f"{r['between_sd']:.1%}"
        n = reps_for_equivalence(v.repetition_sd)
        assert shown["reps for A/A 'equivalent'"] == (str(n) if n <= 1000 else "over 1000")


def test_a_wider_margin_needs_fewer_repetitions():
    narrow = variance.build(_ctx("cpu-repeats", 0.05)).blocks[0].df
    wide = variance.build(_ctx("cpu-repeats", 0.5)).blocks[0].df
    col = "reps for A/A 'equivalent'"
    as_int = [int(x) for x in wide[col] if x.isdigit()]
    assert as_int and all(w != n for w, n in zip(wide[col], narrow[col]))


def test_a_run_of_one_repetition_has_no_section():
    assert variance.build(_ctx("cpu-small")) is None

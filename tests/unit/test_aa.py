"""The A/A check (hvd_vs_ddp/reports/aa.py) on REAL recorded repetitions
(tests/fixtures/runs/cpu-repeats: 6 repetitions per cell, recorded as
tests/unit/test_calibration.py says): every series with 4+ repetitions becomes one A/A
pair, arm A its odd rounds and arm B its even ones, judged by the report's own code;
numbers recomputed here from the pooled steps with numpy.

    python -m pytest tests/unit/test_aa.py -q
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hvd_vs_ddp.reports import aa
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-repeats"


def test_every_series_is_split_by_round():
    data = build_frames([load_run(RUN)])
    df = aa.aa_pairs(data)
    assert len(df) == len(data.throughput) == 10
    assert set(df["reps"]) == {"3+3"}
    for (_, row), (_, tp) in zip(df.iterrows(), data.throughput.iterrows()):
        reps = tp["rep_samples"]
        want = np.median(np.concatenate(reps[0::2])) / np.median(np.concatenate(reps[1::2]))
        assert row["ratio"] == want and row["lo"] <= row["hi"]
        assert row["false"] == (row["verdict"] == "faster")
    assert aa.summary(df)[0].startswith("A/A pairs: 10; false 'faster': ")


def test_upper_bound_of_a_rate():
    assert aa.upper_bound(0, 20) == np.float64(aa.upper_bound(0, 20))
    assert 0.13 < aa.upper_bound(0, 20) < 0.145     # 1 - 0.05 ** (1/20) = 0.139
    assert aa.upper_bound(1, 20) > aa.upper_bound(0, 20)


def test_the_compile_axis_gets_its_own_rates(tmp_path):
    """tests/fixtures/runs/cpu-compile (2 repetitions per cell, eager and inductor) with
    its recorded repetitions listed again as the 3rd and 4th: each compiled series is
    an A/A pair of its own, marked by its compile mode, and the summary gives the
    compiled series' rates on their own line (the plumbing; the rates need a real
    compile run with --repeat 4 or more)."""
    import dataclasses
    import json
    import shutil

    from hvd_vs_ddp.results_schema import load_manifest

    run = tmp_path / "cpu-compile"
    shutil.copytree(RUN.parent / "cpu-compile", run)
    m, _ = load_manifest(run)
    for e in m.cells:
        if len(e.repeats) == 2:
            e.repeats = [*e.repeats, *(dataclasses.replace(r, rep=r.rep + 2) for r in e.repeats)]
            m.order = [*m.order, f"{e.id}.r3", f"{e.id}.r4"]
    m.repeat = 4
    (run / "manifest.json").write_text(json.dumps(m.to_dict()))
    df = aa.aa_pairs(build_frames([load_run(run)]))
    assert set(df["compile"]) == {"eager", "inductor"} and set(df["reps"]) == {"2+2"}
    assert sorted(df.loc[df["compile"] == "inductor", "series"]) == ["ddp-gloo",
                                                                      "horovod (gloo)"]
    lines = aa.summary(df)
    assert lines[0].startswith(f"A/A pairs: {len(df)};")
    assert lines[1].startswith("  eager: 2;") and lines[2].startswith("  compiled: 2;")

"""The profiler's ruler (hvd_vs_ddp/reports/profile_trace.py) over torch.profiler traces recorded on
this machine (tests/fixtures/profile/: `run --profile` of mlp at 2 ranks, ddp-gloo under
torchrun and horovod under horovodrun --gloo, cut to their 2 profiled steps with every
event's `args` removed), and its interval arithmetic as properties (Hypothesis).

    .venv/bin/python -m pytest tests/unit/test_profile_trace.py
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.reports.profile_trace import (
    COMM,
    STEP,
    TraceError,
    breakdown,
    intersect,
    length,
    read_trace,
    union,
)

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "profile"
FILES = sorted(TRACES.glob("*.profile.json"))


def test_fixtures_are_chrome_traces_a_viewer_opens():
    assert len(FILES) == 4
    for f in FILES:
        doc = json.loads(f.read_text())
        events = doc["traceEvents"]
        assert events and all("ph" in e for e in events)
        for e in (e for e in events if e["ph"] == "X"):
            assert {"name", "ts", "dur", "pid", "tid"} <= set(e)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_parts_add_up_to_the_step(path):
    rows = breakdown(read_trace(path))
    assert [r["step"] for r in rows] == [0, 1]
    for r in rows:
        assert r["compute_s"] > 0 and r["comm_s"] > 0
        assert 0 <= r["overlap_s"] <= min(r["compute_s"], r["comm_s"])
        busy = r["compute_s"] + r["comm_s"] - r["overlap_s"]
        assert busy <= r["wall_s"] + 1e-9
        assert busy + r["idle_s"] == pytest.approx(r["wall_s"], abs=1e-9)
        assert r["exposed_comm_s"] == pytest.approx(r["comm_s"] - r["overlap_s"])


def _comm_events(path):
    events = read_trace(path)
    main = next(e["tid"] for e in events if STEP.match(e["name"]))
    return main, [e for e in events if COMM.search(e["name"])]


def test_ddp_communication_is_gloos_worker_threads():
    main, comm = _comm_events(TRACES / "ddp-gloo.rank0.profile.json")
    workers = {e["tid"] for e in comm if e["name"] == "gloo:all_reduce"}
    assert workers and main not in workers  # seen on other threads, overlapping backward


def test_horovod_communication_is_the_marked_wait():
    """Horovod's own thread is invisible: what counts is the training thread's wait."""
    main, comm = _comm_events(TRACES / "horovod-gloo.rank0.profile.json")
    assert {e["name"] for e in comm} == {"horovod:synchronize"}
    assert {e["tid"] for e in comm} == {main}


@pytest.mark.parametrize("text, words", [
    ("{not json", "not a readable JSON trace"),
    ('{"events": []}', "no traceEvents"),
    ('{"traceEvents": [{"ph": "X", "name": "a", "ts": "x", "dur": 1}]}', "numeric ts"),
])
def test_bad_traces_name_the_file(tmp_path, text, words):
    p = tmp_path / "t.json"
    p.write_text(text)
    with pytest.raises(TraceError, match=words) as err:
        read_trace(p)
    assert str(p) in str(err.value)


def test_a_trace_without_step_marks_has_no_steps(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
                 '"ts": 0, "dur": 5, "pid": 1, "tid": 1}]}')
    assert breakdown(read_trace(p)) == []


intervals = st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 50)).map(
    lambda t: (t[0], t[0] + t[1])), max_size=12)


@settings(max_examples=200, deadline=None)
@given(intervals, intervals)
def test_interval_arithmetic(a, b):
    ua, ub = union(a), union(b)
    assert all(x[1] <= y[0] for x, y in zip(ua, ua[1:]))  # sorted, disjoint
    both = intersect(ua, ub)
    assert length(both) <= min(length(ua), length(ub)) + 1e-9
    assert length(union(a + b)) == pytest.approx(length(ua) + length(ub) - length(both),
                                                 abs=1e-6)

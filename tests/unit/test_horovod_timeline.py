"""Horovod timelines recorded on this machine (tests/fixtures/runs/cpu-why/cells/, one per
controller) parsed by hvd_vs_ddp/reports/horovod_timeline.py, checked against the raw events.

The fixtures come from the `hvd-vs-ddp run` in tests/unit/test_why_report.py's docstring.
Horovod ends every event with "}]", so its files are valid JSON as written; a file cut
mid-event (a killed process) is repaired by keeping every complete event, which the
property test checks at every cut position Hypothesis picks. Torch-free.

    python -m pytest tests/unit/test_horovod_timeline.py -q
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.reports.horovod_timeline import ALLREDUCE_OPS, parse, per_step, read_events
from hvd_vs_ddp.results_schema import load_cell_results

CELLS = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-why" / "cells"
TRACES = sorted(CELLS.glob("*.horovod-timeline.json"))


def _record(trace: Path):
    results = trace.with_name(trace.name.replace(".horovod-timeline.json", ".json"))
    return next(b.record for b in load_cell_results(results).benchmarks)


def test_both_controllers_were_recorded():
    assert {t.name.split("-np")[0] for t in TRACES} == {"horovod-horovodrun-gloo",
                                                        "horovod-horovodrun-mpi"}


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_recorded_trace_is_valid_json_a_viewer_opens(trace):
    events = json.loads(trace.read_text())  # as Horovod wrote it, no repair
    assert isinstance(events, list) and events
    assert all("ph" in e for e in events)
    head = events[0]
    assert head["ph"] == "M" and "start_time_since_epoch_in_micros" in head["args"]
    assert read_events(trace) == (events, True)


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_every_fused_response_is_found(trace):
    events, complete = read_events(trace)
    tl = parse(events, complete)
    allreduce = [r for r in tl.responses if r.op == "ALLREDUCE"]
    started = sum(1 for e in events if e.get("ph") == "B" and e.get("name") == "ALLREDUCE")
    assert sum(len(r.tensors) for r in allreduce) == started
    shapes = [e["args"] for e in events if e.get("ph") == "E" and "shape" in (e.get("args") or {})]
    size = {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "uint8": 1}
    want = sum(int(np.prod([int(x) for x in a["shape"].strip("[]").split(",") if x.strip()]))
               * size[a["dtype"]] for a in shapes)
    assert sum(r.bytes for r in tl.responses) == want
    controller = "GLOO_ALLREDUCE" if "gloo" in trace.name else "MPI_ALLREDUCE"
    ops = {k for r in allreduce for k in r.activities if k in ALLREDUCE_OPS}
    assert ops == {controller}
    fused = [r for r in allreduce if len(r.tensors) > 1]
    assert all("MEMCPY_IN_FUSION_BUFFER" in r.activities for r in fused)
    assert tl.cycles_us == sorted(tl.cycles_us) and len(tl.cycles_us) > 10


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_steps_of_the_record_are_cut_from_the_timeline(trace):
    rec = _record(trace)
    tl = parse(*read_events(trace))
    steps = per_step(tl, rec.rank_step_starts[0], rec.rank_step_times[0])
    assert len(steps) == len(rec.step_times)
    for s in steps:
        assert s["responses"] >= 1 and s["tensors"] >= s["responses"]
        # what Horovod did inside a step fits inside it
        assert 0 < s["allreduce_s"] <= s["op_s"] <= s["step_s"]
        assert s["cycles"] >= 1


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_a_cut_file_keeps_every_complete_event(trace, tmp_path):
    text = trace.read_text()
    full = json.loads(text)
    ends, dec, pos = [], json.JSONDecoder(), text.index("[") + 1
    for _ in full:  # where each event ends in the file
        while text[pos] in " \t\r\n,":
            pos += 1
        pos = dec.raw_decode(text, pos)[1]
        ends.append(pos)

    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(st.integers(1, len(text) - 2))
    def check(cut):
        part = tmp_path / "cut.json"
        part.write_text(text[:cut])
        events, complete = read_events(part)
        assert not complete
        # exactly the events that end before the cut, in order
        assert events == full[:sum(e <= cut for e in ends)]
    check()

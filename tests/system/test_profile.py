"""`run --profile` for real: torch.profiler traces per rank beside the cell's results,
valid Chrome traces, read back by the report's profiler ruler; and Horovod's wait for
its background thread marked in the trace (horovodrun --gloo, the suite directly).

    python -m pytest tests/system/test_profile.py
"""
from __future__ import annotations

import json

import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.reports import build_report
from hvd_vs_ddp.reports.profile_trace import breakdown, read_trace
from hvd_vs_ddp.results_schema import load_cell_results
from tests.launch import TINY_RUN_SUITE_ARGS, TINY_SUITE_ARGS, explain, horovod_available, launched

pytestmark = pytest.mark.multiproc


def _viewer_trace(path) -> list[dict]:
    doc = json.loads(path.read_text())  # the whole file as written: valid JSON
    events = doc["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)
    for e in events:
        assert "ph" in e and "name" in e
    return events


def test_run_profile_traces_and_report(tmp_path):
    runs = tmp_path / "runs"
    assert cli(["run", "--backends", "ddp-gloo", "--world-sizes", "2", "--workloads", "mlp",
                "--runs-dir", str(runs), "--name", "prof", "--repeat", "1", "--profile",
                "--suites", "throughput",  # what --profile adds to (one cell)
                "--suite-args", TINY_RUN_SUITE_ARGS]) == 0
    run = runs / "prof"
    man = json.loads((run / "manifest.json").read_text())
    ddp = next(c for c in man["cells"] if c["backend"] == "ddp-gloo")
    res = run / ddp["results"]
    rec = next(b.record for b in load_cell_results(res).benchmarks
               if b.record.KIND == "throughput")
    assert rec.profile_traces == [f"{res.stem}.mlp.default.rank{r}.profile.json"
                                  for r in (0, 1)]
    assert len(rec.step_times) == 2  # the profiled steps are not timed
    for name in rec.profile_traces:
        _viewer_trace(res.parent / name)
        rows = breakdown(read_trace(res.parent / name))
        assert [r["step"] for r in rows] == [0, 1, 2]  # run --profile: 3 steps
        assert all(r["comm_s"] > 0 and r["compute_s"] > 0 for r in rows)
    out = tmp_path / "out" / "report.html"
    paths = build_report([run], out)
    md = paths.markdown.read_text()
    section = md[md.index("The same ruler for both: torch.profiler"):]
    assert "| mlp | ddp-gloo | 2 |" in section.split("\n\n")[1]


@pytest.mark.horovod
def test_horovod_wait_marked(tmp_path):
    ok, why = horovod_available()
    if not ok:
        pytest.skip(why)
    out = tmp_path / "hvd.json"
    proc = launched("horovodrun-gloo", 2, ["-m", "pytest",
                                           "suites/test_throughput.py::test_throughput",
                                           *TINY_SUITE_ARGS, "--backends", "horovod",
                                           "--profile-steps", "2",
                                           "--benchmark-json", str(out)])
    assert proc.returncode == 0, explain(proc)
    rec = load_cell_results(out).benchmarks[0].record
    assert rec.profile_traces and len(rec.profile_traces) == 2
    for name in rec.profile_traces:
        events = _viewer_trace(tmp_path / name)
        assert sum(e["name"] == "horovod:synchronize" for e in events) == 2
        assert all(r["comm_s"] > 0 for r in breakdown(read_trace(tmp_path / name)))

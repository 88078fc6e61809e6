"""Each library's own instrumentation on real ranks: DDP's statistics in the throughput
results, Horovod's timeline beside them (both controllers), read back by the report.
The jobs are shared (tests/system/jobs.py): the DDP statistics come from the suites'
torchrun job of test_suites_launchers.

    python -m pytest tests/system/test_why_instrumentation.py -q
"""
from __future__ import annotations

import json

import pytest

from hvd_vs_ddp.reports.horovod_timeline import parse, per_step, read_events
from hvd_vs_ddp.results_schema import load_cell_results
from tests.launch import explain
from tests.system.jobs import DDP_STATS_OFF, SUITES, TIMELINE

pytestmark = [pytest.mark.multiproc]


def test_ddp_statistics_per_rank_and_timed_step(jobs):
    ran = jobs.get(SUITES["torchrun", 2])  # the suites' default --ddp-sample-rate 1
    assert ran.proc.returncode == 0, explain(ran.proc)
    (rec,) = [b.record for b in load_cell_results(ran.results_path).benchmarks
              if b.record.KIND == "throughput" and b.record.backend == "ddp-gloo"]
    st = rec.ddp_stats
    assert st is not None and st["sample_rate"] == 1
    assert st["bucket_sizes"] and st["bucket_cap_bytes"] == 25 * 2**20
    assert sum(st["bucket_sizes"]) == st["total_parameter_size_bytes"]
    steps = len(rec.step_times)
    for rank, row in enumerate(st["ranks"]):
        assert row["rank"] == rank
        # the last timed step's values would be written at the next forward pass
        assert len(row["iterations"]) == steps - 1, row
        assert all(c >= o >= 0 for c, o in zip(row["backward_comm_s"], row["overlap_s"]))
        assert all(0 < f < t for f, t in zip(row["forward_compute_s"], rec.step_times))


def test_ddp_statistics_off(jobs):
    ran = jobs.get(DDP_STATS_OFF)
    assert ran.proc.returncode == 0, explain(ran.proc)
    assert load_cell_results(ran.results_path).benchmarks[0].record.ddp_stats is None


@pytest.mark.horovod
@pytest.mark.parametrize("launcher, op", [("horovodrun-gloo", "GLOO_ALLREDUCE"),
                                          ("horovodrun-mpi", "MPI_ALLREDUCE")])
def test_horovod_timeline_beside_the_results(jobs, launcher, op):
    ran = jobs.get(TIMELINE[launcher])
    assert ran.proc.returncode == 0, explain(ran.proc)
    rec = load_cell_results(ran.results_path).benchmarks[0].record
    assert rec.KIND == "horovod_timeline" and rec.timeline == "hvd.horovod-timeline.json"
    trace = ran.folder / rec.timeline
    json.loads(trace.read_text())  # a complete file: valid JSON as written
    events, complete = read_events(trace)
    tl = parse(events, complete)
    assert complete and tl.start_epoch_us is not None and tl.cycles_us
    steps = per_step(tl, rec.rank_step_starts[0], rec.rank_step_times[0])
    assert len(steps) == len(rec.step_times)
    assert all(s["responses"] >= 1 and s["allreduce_s"] > 0 for s in steps), steps
    assert any(op in r.activities for r in tl.responses)

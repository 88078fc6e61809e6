"""A recovery trial's figures from event logs (hvd_vs_ddp/recovery/metrics.py): the
definitions on hand-made logs, and on the logs of real trials recorded in
tests/fixtures/recovery/ (Horovod Elastic at 3 ranks, torchrun with torch.save at 2,
torchft at 3; first repetitions of the run in tests/fixtures/runs/cpu-recovery), read
back through the driver's own loader; and what a hung trial records (one plain Python
process, the only one launched). Torch-free.

    python -m pytest tests/unit/test_recovery_metrics.py -q
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hvd_vs_ddp.recovery.driver import MARKER, Trial, _stuck, load_trial
from hvd_vs_ddp.recovery.events import EventLog, Tail, read_events
from hvd_vs_ddp.recovery.metrics import compute
from hvd_vs_ddp.recovery.plan import Plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recovery"
PLAN = Plan(path="horovod-elastic", checkpoint="memory", backend="horovod", world_size=2,
            global_batch=8, steps=8, commit_every=3, kill_step=4)


def ev(t, ev, pid, rank, world=2, host="localhost", **kw):
    return {"ev": ev, "t": t, "pid": pid, "host": host, "rank": rank, "world": world, **kw}


def horovod_like() -> tuple[list[dict], dict]:
    """Two ranks; rank 1 (pid 2, 127.0.0.1) killed after step 5 at t=10; rank 0 rolls back
    to its commit of step 3 and finishes alone; one of its steps is logged after the kill
    but before its new segment (it completed with the victim's help)."""
    out = [ev(0.0, "segment", 1, 0, resume=0), ev(0.0, "segment", 2, 1, host="127.0.0.1",
                                                   resume=0)]
    for s in range(1, 6):
        for pid, rank in ((1, 0), (2, 1)):
            out.append(ev(s, "step", pid, rank, step=s, loss=1.0 / s))
        if s == 3:
            out.append(ev(3.5, "commit", 1, 0, step=3, seconds=0.1, save_s=0.02))
            out.append(ev(3.5, "commit", 2, 1, step=3, seconds=0.2, save_s=0.03))
    out += [ev(10.2, "step", 1, 0, step=6, loss=9.0),  # completed before the victim died
            ev(11.0, "restore", 1, 0, step=3, seconds=0.01),
            ev(12.0, "reset", 1, 0, world=1),
            ev(12.5, "sync", 1, 0, world=1, step=3, seconds=0.05),
            ev(12.5, "segment", 1, 0, world=1, resume=3)]
    out += [ev(13.0 + i, "step", 1, 0, world=1, step=4 + i, loss=0.5) for i in range(5)]
    out.append(ev(18.0, "done", 1, 0, world=1, step=8))
    return out, {"t": 10.0, "pid": 2, "rank": 1, "host": "127.0.0.1", "step": 5}


def test_a_commit_the_kill_cut_short_counts_where_the_job_resumes_from_it():
    """The kill lands in the commit after step 6: rank 0 had saved step 6 in memory (its
    save is local) when the host check's broadcast failed, so no `commit` was logged and
    Horovod restored step 6 (seen once under load: a test expected the commit before)."""
    events, kill = horovod_like()
    events = [e for e in events if e["t"] < 10.5]
    events += [ev(10.25, "saved", 1, 0, step=6, seconds=0.01),
               ev(11.0, "restore", 1, 0, step=6, seconds=0.01),
               ev(12.5, "segment", 1, 0, world=1, resume=6),
               ev(13.0, "step", 1, 0, world=1, step=7, loss=0.5),
               ev(14.0, "step", 1, 0, world=1, step=8, loss=0.5),
               ev(14.5, "done", 1, 0, world=1, step=8)]
    f = compute(events, kill, PLAN, t0=-1.0)
    assert (f["killed_after_step"], f["last_commit_step"], f["resume_step"]) == (6, 6, 6)
    assert f["steps_lost"] == 0 and f["completed"]


def test_a_checkpoint_finished_after_the_kill_by_the_old_rank_0_counts():
    """torchrun: rank 0 finishes writing step 6's checkpoint after its peer died and
    before its agent stops it; the restarted group (new processes) resumes from it."""
    events, kill = horovod_like()
    events = [e for e in events if e["t"] < 10.5]
    events += [ev(10.3, "commit", 1, 0, step=6, seconds=0.05, save_s=0.05),
               ev(20.0, "segment", 3, 0, resume=6), ev(20.0, "segment", 4, 1, resume=6),
               ev(21.0, "step", 3, 0, step=7, loss=0.5), ev(21.0, "step", 4, 1, step=7,
                                                              loss=0.5)]
    f = compute(events, kill, PLAN, t0=-1.0)
    assert (f["killed_after_step"], f["last_commit_step"], f["resume_step"]) == (6, 6, 6)
    assert f["steps_lost"] == 0


def test_definitions_on_a_hand_made_log():
    events, kill = horovod_like()
    f = compute(events, kill, PLAN, t0=-1.0)
    assert f["completed"] and f["final_step"] == 8
    assert (f["world_before"], f["world_after"]) == (2, 1)
    assert f["killed_after_step"] == 6  # the step logged after the kill was done before it
    assert (f["last_commit_step"], f["resume_step"], f["steps_lost"]) == (3, 3, 3)
    assert f["rendezvous_s"] == pytest.approx(2.5)
    assert f["recovery_s"] == pytest.approx(3.0)  # to step 4 after the new segment
    assert (f["kill_t"], f["recovered_t"]) == (pytest.approx(11.0), pytest.approx(14.0))
    assert f["restore_s"] == 0.01 and f["sync_s"] == 0.05
    assert f["commit_s"] == [0.2] and f["save_s"] == [0.02]  # slowest rank; rank 0's save
    assert f["losses"][3] == 0.5 and f["losses"][0] == 1.0  # redone steps: the recovered run's
    assert f["final_loss"] == 0.5
    assert [s for s, _ in f["step_intervals"]] == [2, 3, 4, 5]  # rank 0 before the kill
    assert f["segments"][-1][1:] == [3, 1]


def test_no_kill_and_no_recovery():
    events, kill = horovod_like()
    f = compute(events, None, PLAN, t0=0.0)
    assert f["steps_lost"] is None and f["recovery_s"] is None and f["completed"]
    stuck = [e for e in events if e["t"] < 11.0]  # the survivor never came back
    f = compute(stuck, kill, PLAN, t0=0.0)
    assert not f["completed"] and f["killed_after_step"] == 6
    assert f["resume_step"] is None and f["recovery_s"] is None and f["steps_lost"] is None


def test_event_log_round_trip_and_a_line_cut_by_sigkill(tmp_path):
    log = EventLog(tmp_path, host="127.0.0.1")
    log.rank, log.world = 1, 2
    log.write("step", step=1, loss=0.25)
    with open(tmp_path / f"{log.pid}.jsonl", "a") as f:
        f.write('{"ev": "step", "t": 1')  # what SIGKILL leaves mid-line
    tail = Tail(tmp_path)
    assert [e["step"] for e in tail.poll()] == [1] and tail.poll() == []
    [e] = read_events(tmp_path)
    assert (e["host"], e["rank"], e["world"], e["loss"]) == ("127.0.0.1", 1, 2, 0.25)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()) if
                         FIXTURES.is_dir() else [])
def test_recorded_trials(name):
    """Logs of real trials (recorded by python -m hvd_vs_ddp.recovery.driver --out DIR):
    expected.json holds the figures computed when they were recorded."""
    trial = load_trial(FIXTURES / name)
    f = trial.figures()
    want = json.loads((FIXTURES / name / "expected.json").read_text())
    for key, value in want.items():
        assert f[key] == pytest.approx(value), key
    assert f["completed"] and f["steps_lost"] == f["killed_after_step"] - f["resume_step"]
    per_step = trial.plan.elastic.per_step  # torchft: nothing committed is lost
    assert f["resume_step"] == (f["killed_after_step"] if per_step else f["last_commit_step"])
    assert f["recovery_s"] >= f["rendezvous_s"] > 0


# -- the trial's folder passes the output gate (hvd_vs_ddp/recovery/driver.py claim) ------
def test_a_trial_folder_is_claimed_through_the_output_gate(tmp_path):
    from hvd_vs_ddp.common import output_formats, outputs
    from hvd_vs_ddp.recovery.driver import PLAN_FILE, claim

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's file")
    with pytest.raises(outputs.OutputRefused, match="not a recovery trial's folder"):
        claim(mine)
    assert (mine / "notes.txt").read_text() == "a user's file"
    (tmp_path / "empty").mkdir()
    claim(tmp_path / "empty")  # an empty folder or none at all: nothing to refuse
    claim(tmp_path / "new" / "trial")
    earlier = tmp_path / "earlier"  # an earlier trial's folder: emptied, events and all
    earlier.mkdir()
    PLAN.save(earlier / PLAN_FILE)
    assert output_formats.identify(earlier / PLAN_FILE).kind == output_formats.RECOVERY_PLAN
    assert Plan.load(earlier / PLAN_FILE) == PLAN  # the marker is not a plan field
    (earlier / "events").mkdir()
    (earlier / "events" / "1.jsonl").write_text("{}\n")
    claim(earlier)
    assert not earlier.exists()


def test_a_trial_never_writes_into_another_run(tmp_path):
    from hvd_vs_ddp.common import outputs
    from hvd_vs_ddp.recovery.driver import claim

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "cpu-small",
                    run)
    trial = run / "cells" / "x.r1.recovery" / "horovod-np2" / "horovod-elastic-memory"
    with pytest.raises(outputs.OutputRefused, match="inside the run directory"):
        claim(trial)
    claim(trial, owner=run)  # the run's own cell may
    with pytest.raises(outputs.OutputRefused, match="inside the run directory"):
        claim(run / "logs" / "trial", owner=run)  # cells/ only


def test_a_hung_worker_is_named_with_its_stacks(tmp_path):
    """At a hang the driver records the job's processes still running and each worker
    among them writes its Python stacks to its log (what the next hang's message shows)."""
    tag = "stuck-test"
    code = ("import sys, time\n"
            "from hvd_vs_ddp.recovery.events import EventLog, answer_stack_requests\n"
            "answer_stack_requests()\n"
            f"log = EventLog({str(tmp_path / 'events')!r}, host='127.0.0.1')\n"
            "log.write('step', step=3)\n"
            "def waiting_for_a_peer():\n"
            "    time.sleep(60)\n"
            "waiting_for_a_peer()\n")
    err = tmp_path / "launcher-0.log"
    with open(err, "w") as out:
        proc = subprocess.Popen([sys.executable, "-c", code], stderr=out,
                                env={**os.environ, MARKER: tag})
    try:
        tail = Tail(tmp_path / "events")
        deadline = time.monotonic() + 30
        while not tail.events and time.monotonic() < deadline:
            time.sleep(0.05)
            if (tmp_path / "events").is_dir():
                tail.poll()
        [stuck] = _stuck(tag, tail.events)
        assert stuck["pid"] == proc.pid and stuck["worker"] and "python" in stuck["cmd"]
        assert "in waiting_for_a_peer" in err.read_text()  # its stack, from faulthandler
    finally:
        proc.kill()
        proc.wait()
    trial = Trial(PLAN, tmp_path, 0.0, tail.events, None, [None], True, [], 1.0, [stuck])
    message = trial.log_tail()
    assert f"pid {proc.pid} 127.0.0.1 r-1/-1: step 3" in message
    assert f"pid {proc.pid} ({stuck['state']})" in message

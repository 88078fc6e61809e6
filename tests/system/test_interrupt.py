"""Interrupting `hvd-vs-ddp run` for real: SIGINT (Ctrl-C), SIGTERM (Slurm at a job's
time limit) and SIGHUP while a cell's ranks are running. Each must end the cell's
whole process tree, record that cell as "interrupted", leave a valid manifest marked
incomplete, exit 128 + the signal (130, 143, 129), and `--resume` must then finish the
run. Also: a signal the run was started ignoring (`nohup` ignores SIGHUP) is ignored.
One run carries all of it: interrupted, resumed and interrupted again by the next
signal, and finally resumed to the end (a resume is interrupted like a run).

    python -m pytest tests/system/test_interrupt.py -q
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.launch import ROOT, TINY_RUN_SUITE_ARGS, default_stop_signals, leftovers

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


def _env(marker: str) -> dict[str, str]:
    env = dict(os.environ, HVD_TEST_MARKER=marker, PYTHONPATH=str(ROOT),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def _rank_pids(marker: str, runner: int) -> list[int]:
    """Processes of the job running the suites (not the runner itself)."""
    pids = []
    for pid in leftovers(marker):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if pid != runner and b"suites/" in cmd:
            pids.append(pid)
    return pids


def _start(runs: Path, marker: str, ignore: tuple[int, ...] = (),
           resume: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--backends", "ddp-gloo",
           "--world-sizes", "2", "--workloads", "mlp", "--runs-dir", str(runs), "--name",
           "int", "--repeat", "1", "--order-seed", "1", "--suite-args", TINY_RUN_SUITE_ARGS]
    if resume:
        cmd = [sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--resume", str(runs / "int")]
    return subprocess.Popen(cmd, cwd=ROOT, env=_env(marker), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: default_stop_signals(ignore))


def _wait_for_ranks(proc: subprocess.Popen, marker: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if len(_rank_pids(marker, proc.pid)) >= 3:  # torchrun and its 2 ranks
            time.sleep(1.0)  # the ranks are past start-up: mid-cell
            return
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"no rank started within {timeout}s")


# How long the test waits for an interrupted run to end before calling it hung: the
# runner's SIGTERM-then-SIGKILL grace for the cell's processes
# (hvd_vs_ddp/common/processes.py end_marked, 5 s) twice over, plus the launcher's own
# teardown, with room for a loaded host. How long it took is printed, not asserted: a
# duration from one run on a noisy host is a measurement, not a mechanism.
HANG_S = 60


def _interrupt(proc: subprocess.Popen, marker: str, run: Path, sig: int,
               resumes: int) -> None:
    """`sig` ends the run (or its resume) in flight: its exit status, one line, nothing
    left, a valid manifest marked incomplete naming the signal."""
    sent = time.monotonic()
    os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"`hvd-vs-ddp run` still running {HANG_S} s after "
                    f"{signal.Signals(sig).name}")
    took = time.monotonic() - sent
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, (proc.returncode, err[-2000:])
    assert f"interrupted by {name}" in err and "--resume" in err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert leftovers(marker) == [], f"processes of the cell interrupted by {name} outlived it"
    man = json.loads((run / "manifest.json").read_text())
    assert man["complete"] is False and man["interrupted"] and man["finished"] is None
    assert len(man.get("resumed") or []) == resumes, man.get("resumed")
    statuses = {c["id"]: c["status"] for c in man["cells"]}
    hit = [c for c in man["cells"] if c["status"] == "interrupted" and name in c["error"]]
    assert len(hit) == 1, statuses
    assert hit[0]["repeats"][0]["status"] == "interrupted"
    assert set(statuses.values()) <= {"passed", "interrupted", "pending"}, statuses
    print(f"interrupted by {name} in {took:.1f} s")


def test_signals_interrupt_the_run_and_resume_finishes_it(tmp_path):
    """One run, interrupted while a cell's ranks run, three times, each by another signal,
    and resumed after each (four launches of the runner, not seven):
    1. started as under `nohup` (SIGHUP ignored from the start): SIGHUP is ignored, then
       SIGTERM (Slurm at a job's time limit) ends it: exit 143;
    2. `--resume`, SIGINT (Ctrl-C) while its first cell runs: exit 130;
    3. `--resume`, SIGHUP (a closed terminal; not ignored by this one): exit 129;
    4. `--resume`, its cell frozen mid-run (SIGSTOP to its launcher and ranks: a hung
       cell, so that nothing finishes early on a slow machine): a second `--resume` of
       the same run is refused (one line, exit 2: one runner per run); then SIGKILL of
       the runner (the OOM killer), which no runner can handle: its cell outlives it;
    5. `--resume` ends those orphans first (stopped ones too) and says so, then finishes
       the run: every cell passed, the manifest complete."""
    marker = f"hvd-int-{uuid.uuid4().hex}"
    runs = tmp_path / "runs"
    run = runs / "int"
    proc = _start(runs, marker, ignore=(signal.SIGHUP,))
    _wait_for_ranks(proc, marker)
    os.kill(proc.pid, signal.SIGHUP)
    time.sleep(2.0)
    assert proc.poll() is None, "SIGHUP stopped a run started with SIGHUP ignored"
    _interrupt(proc, marker, run, signal.SIGTERM, resumes=0)
    for resumes, sig in ((1, signal.SIGINT), (2, signal.SIGHUP)):
        proc = _start(runs, marker, resume=True)
        _wait_for_ranks(proc, marker)
        _interrupt(proc, marker, run, sig, resumes)

    proc = _start(runs, marker, resume=True)
    _wait_for_ranks(proc, marker)
    # the cell's launcher and ranks frozen (a hung cell): the runner waits on them however
    # slow the machine, and they are still there when the runner is gone
    cell = _rank_pids(marker, proc.pid)
    for pid in cell:
        os.kill(pid, signal.SIGSTOP)
    second = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--resume",
                             str(run)], cwd=ROOT, env=_env(marker), capture_output=True,
                            text=True, timeout=120)
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 2 and len(lines) == 1, second.stderr[-2000:]
    assert "is being run by another" in lines[0], lines
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    orphans = _rank_pids(marker, proc.pid)
    assert orphans and set(orphans) <= set(cell), (orphans, cell)  # they outlived it

    again = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--resume",
                            str(run)], cwd=ROOT, env=_env(marker), capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "left running by an earlier runner" in again.stderr, again.stderr[-2000:]
    done = json.loads((run / "manifest.json").read_text())
    assert done["complete"] is True and len(done["resumed"]) == 4
    assert all(c["status"] == "passed" for c in done["cells"]), done["cells"]
    assert leftovers(marker) == []


def test_end_marked_ends_a_tree_that_left_its_session():
    """The cleanup finds processes by marker even when they escaped the process group."""
    from hvd_vs_ddp.cli.run_lock import CELL_MARKER
    from hvd_vs_ddp.common.processes import end_marked, marked

    value = uuid.uuid4().hex
    env = dict(os.environ, **{CELL_MARKER: value})
    # a shell that starts a child in a new session, then ignores SIGTERM itself
    proc = subprocess.Popen(["bash", "-c", "trap '' TERM; setsid sleep 300 & sleep 300"],
                            env=env, start_new_session=True)
    deadline = time.monotonic() + 10
    while len(marked(CELL_MARKER, value)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(marked(CELL_MARKER, value)) == 3
    assert len(end_marked(CELL_MARKER, value, grace=1.0)) == 3
    proc.wait(timeout=10)
    assert marked(CELL_MARKER, value) == []

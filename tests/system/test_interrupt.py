"""Interrupting `hvd-vs-ddp run` for real: SIGINT (Ctrl-C), SIGTERM (Slurm at a job's
time limit) and SIGHUP while a cell's ranks are running. Each must end the cell's
whole process tree, record that cell as "interrupted", leave a valid manifest marked
incomplete, exit 128 + the signal (130, 143, 129), and `--resume` must then finish the
run. Also: a signal the run was started ignoring (`nohup` ignores SIGHUP) is ignored.

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

from tests.launch import ROOT, leftovers

pytestmark = pytest.mark.multiproc
TINY = "--rounds 2 --steps-per-round 1 --warmup-steps 1 --convergence-steps 3 --max-bytes 4096"


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


def _default_signals(ignore: tuple[int, ...] = ()) -> None:
    """In the child, before exec: the stop signals at their defaults, whatever this test
    process inherited (a CI job started under nohup, or in the background, ignores
    SIGHUP or SIGINT, and an ignored signal stays ignored across exec)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN if s in ignore else signal.SIG_DFL)


def _start(runs: Path, marker: str, ignore: tuple[int, ...] = ()) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--backends", "ddp-gloo",
           "--world-sizes", "2", "--workloads", "mlp", "--runs-dir", str(runs), "--name",
           "int", "--repeat", "1", "--order-seed", "1", "--suite-args", TINY]
    return subprocess.Popen(cmd, cwd=ROOT, env=_env(marker), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: _default_signals(ignore))


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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_signal_interrupts_the_run_and_resume_finishes_it(tmp_path, sig):
    marker = f"hvd-int-{uuid.uuid4().hex}"
    runs = tmp_path / "runs"
    proc = _start(runs, marker)
    _wait_for_ranks(proc, marker)
    sent = time.monotonic()
    os.kill(proc.pid, sig)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"`hvd-vs-ddp run` still running 60 s after {sig.name}")
    took = time.monotonic() - sent
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, (proc.returncode, err[-2000:])
    assert f"interrupted by {name}" in err and "--resume" in err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert leftovers(marker) == [], "processes of the interrupted cell outlived it"

    run = runs / "int"
    man = json.loads((run / "manifest.json").read_text())
    assert man["complete"] is False and man["interrupted"] and man["finished"] is None
    statuses = {c["id"]: c["status"] for c in man["cells"]}
    hit = [c for c in man["cells"] if c["status"] == "interrupted"]
    assert len(hit) == 1, statuses
    assert name in hit[0]["error"] and hit[0]["repeats"][0]["status"] == "interrupted"
    assert set(statuses.values()) <= {"passed", "interrupted", "pending"}, statuses
    assert took < 30, f"the interruption took {took:.1f}s"

    again = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--resume",
                            str(run)], cwd=ROOT, env=_env(marker), capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    done = json.loads((run / "manifest.json").read_text())
    assert done["complete"] is True and len(done["resumed"]) == 1
    assert all(c["status"] == "passed" for c in done["cells"]), done["cells"]
    assert leftovers(marker) == []


def test_a_signal_started_ignored_stays_ignored(tmp_path):
    """`nohup hvd-vs-ddp run ...`: SIGHUP (ignored from the start) does not stop it."""
    marker = f"hvd-int-{uuid.uuid4().hex}"
    runs = tmp_path / "runs"
    proc = _start(runs, marker, ignore=(signal.SIGHUP,))
    _wait_for_ranks(proc, marker)
    os.kill(proc.pid, signal.SIGHUP)
    time.sleep(2.0)
    assert proc.poll() is None, "SIGHUP stopped a run started with SIGHUP ignored"
    os.kill(proc.pid, signal.SIGTERM)  # and it still stops cleanly on SIGTERM
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    time.sleep(0.5)
    assert leftovers(marker) == []


def test_end_marked_ends_a_tree_that_left_its_session():
    """The cleanup finds processes by marker even when they escaped the process group."""
    from hvd_vs_ddp.common.processes import end_marked, marked

    value = uuid.uuid4().hex
    env = dict(os.environ, HVD_VS_DDP_CELL=value)
    # a shell that starts a child in a new session, then ignores SIGTERM itself
    proc = subprocess.Popen(["bash", "-c", "trap '' TERM; setsid sleep 300 & sleep 300"],
                            env=env, start_new_session=True)
    deadline = time.monotonic() + 10
    while len(marked("HVD_VS_DDP_CELL", value)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(marked("HVD_VS_DDP_CELL", value)) == 3
    assert len(end_marked("HVD_VS_DDP_CELL", value, grace=1.0)) == 3
    proc.wait(timeout=10)
    assert marked("HVD_VS_DDP_CELL", value) == []

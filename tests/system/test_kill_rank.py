"""kill -9 of a rank at a random moment ends the job quickly and leaves no process.

Each trial starts the suites (tiny sizes) on 2 ranks under a launcher, waits a
random time after both ranks exist, SIGKILLs one rank at random (every trial must kill
one: a job that ended first is tried again sooner), and then counts:
- a hang: the job still running 60 s after the kill (it is then killed by us);
- leftovers: processes of the job alive after it ended (by an environment marker).
HVD_KILL_TRIALS sets the number of trials (default one per launcher here; the figure in the
closing note comes from HVD_KILL_TRIALS=20). Also: the runner records a killed
cell as failed, goes on, and `--resume` reruns it.

    HVD_KILL_TRIALS=20 python -m pytest tests/system/test_kill_rank.py -s
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest

from hvd_vs_ddp.backends import launchers
from tests.launch import ROOT, TINY_RUN_SUITE_ARGS, TINY_SUITE_ARGS, horovod_available, leftovers

pytestmark = pytest.mark.multiproc
TINY = ["-m", "pytest", "suites/test_throughput.py", "suites/test_convergence.py",
        "suites/test_collectives.py", *TINY_SUITE_ARGS, "--benchmark-json"]


def _ranks(marker: str, launcher_pid: int) -> list[int]:
    """The rank processes: python running pytest, carrying the marker, not the launcher."""
    out = []
    for pid in leftovers(marker):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if pid != launcher_pid and b"pytest" in cmd and any(b"python" in c for c in cmd[:1]):
            out.append(pid)
    return out


def _running(pid: int) -> bool:
    """Not ended: a rank that exited stays a zombie until its launcher reaps it, and
    os.kill on a zombie succeeds without effect (so its job still exits 0: a fresh clone
    once saw "a killed job exited 0" when the kill came after the rank's own exit)."""
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False


def one_trial(launcher: str, rng: random.Random, tmp: Path, lives: dict[str, float]) -> dict:
    """Start the job, SIGKILL one rank at a random moment of its life (counted from when
    both ranks exist, not from the launch), drawn uniformly within how long this
    launcher's ranks lived when a job ended before its moment (`lives`, learned here;
    10 s until then). So every trial kills a rank whatever the machine's speed, and the
    moments still cover the whole life, from start-up to the results' gathering."""
    for _ in range(6):
        trial = _attempt(launcher, rng, tmp, rng.uniform(0.0, lives.get(launcher, 10.0)))
        if trial["killed"]:
            return trial
        lives[launcher] = min(lives.get(launcher, 10.0), trial["lived"])
    return trial


def _attempt(launcher: str, rng: random.Random, tmp: Path, delay: float) -> dict:
    marker = f"hvd-kill-{uuid.uuid4().hex}"
    env = launchers.env(launcher=launcher)
    env.update(PYTHONPATH=str(ROOT), HVD_TEST_MARKER=marker)
    cmd = launchers.command(launcher, 2, [*TINY, str(tmp / f"{marker}.json")])
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    ranks: list[int] = []
    born = time.monotonic() + 120  # both ranks exist well within this
    while proc.poll() is None and len(ranks) < 2 and time.monotonic() < born:
        time.sleep(0.05)
        ranks = _ranks(marker, proc.pid)
    seen = time.monotonic()
    deadline = seen + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    lived = time.monotonic() - seen  # the whole life, where the job ended first
    victim = None
    if proc.poll() is None and ranks:
        victim = rng.choice(ranks)
        try:
            if not _running(victim):  # it ended already: a zombie takes the signal unmoved
                raise ProcessLookupError
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:  # it ended between the check and the kill
            victim = None
    killed_at = time.monotonic()
    hang = False
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        hang = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    ended_in = time.monotonic() - killed_at
    time.sleep(1.0)
    left = leftovers(marker)
    for pid in left:  # never leave them to the next trial
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"launcher": launcher, "delay": round(delay, 2), "killed": victim is not None,
            "hang": hang, "ended_in": round(ended_in, 1), "leftovers": len(left),
            "lived": lived,
            "returncode": proc.returncode, "tail": out.decode(errors="replace")[-600:]}


def test_random_kills_never_hang_or_leave_processes(tmp_path):
    launchers_ = ["torchrun", "mpirun"]
    if horovod_available()[0] and launchers.available("horovodrun-gloo"):
        launchers_.append("horovodrun-gloo")
    trials = int(os.environ.get("HVD_KILL_TRIALS", str(len(launchers_))))
    rng = random.Random(int(os.environ.get("HVD_KILL_SEED", "0")))
    lives: dict[str, float] = {}
    results = [one_trial(launchers_[i % len(launchers_)], rng, tmp_path, lives)
               for i in range(trials)]
    summary = {"trials": trials, "killed": sum(r["killed"] for r in results),
               "hangs": sum(r["hang"] for r in results),
               "leftover_processes": sum(r["leftovers"] for r in results),
               "max_seconds_to_end": max(r["ended_in"] for r in results)}
    print("\nkill-rank summary:", json.dumps(summary))
    for r in results:
        if not r["killed"] and r["returncode"] != 0:
            print(f"  unexpected failure without a kill:\n{r['tail']}")
        print(f"  {r['launcher']:16s} kill after {r['delay']:5.1f}s killed={r['killed']} "
              f"ended in {r['ended_in']:5.1f}s rc={r['returncode']} leftovers={r['leftovers']}")
    assert summary["killed"] == trials, [r for r in results if not r["killed"]]
    assert summary["hangs"] == 0, [r for r in results if r["hang"]]
    assert summary["leftover_processes"] == 0, [r for r in results if r["leftovers"]]
    for r in results:
        assert r["returncode"] != 0, f"a killed job exited 0: {r['tail']}"


def _run_with(monkeypatch, env: dict[str, str], args: list[str]) -> None:
    """`hvd-vs-ddp ARGS` in process with `env` set for it (its cells inherit it) and
    unset again after: the fault plugin must not reach a later run."""
    from hvd_vs_ddp.cli import main as cli

    with monkeypatch.context() as m:
        for k, v in env.items():
            m.setenv(k, v)
        assert cli(args) == 0


def test_runner_records_a_killed_cell_and_resume_reruns_it(tmp_path, monkeypatch):
    """A cell whose rank dies is 'failed' with its error; the run's other cell still runs
    and passes, and `--resume` reruns the failed cell alone."""
    from hvd_vs_ddp.cli import main as cli

    runs = tmp_path / "runs"
    args = ["run", "--backends", "ddp-gloo", "--world-sizes", "2", "--workloads", "mlp",
            "--runs-dir", str(runs), "--name", "killed", "--allow-failures", "--repeat", "1",
            "--suites", "throughput,compute",  # a timed cell and its compute-only twin
            "--suite-args", TINY_RUN_SUITE_ARGS]
    injected = {"HVD_VS_DDP_TEST_KILL_RANK": "1",  # tests/plugins/kill_rank.py: rank 1
                "PYTEST_PLUGINS": "tests.plugins.kill_rank",  # kills itself in the cell
                "HVD_VS_DDP_TEST_KILL_ONLY": "test_throughput["}  # timing DDP, not the twin
    _run_with(monkeypatch, injected, args)
    manifest = json.loads((runs / "killed" / "manifest.json").read_text())
    status = {c["id"]: c for c in manifest["cells"]}
    killed = status["ddp-gloo-torchrun-np2"]
    assert killed["status"] == "failed" and killed["error"], killed
    assert killed["error"].startswith("ddp-gloo-torchrun-np2: ") and "rank 1" in killed["error"]
    twin = status["compute-only-torchrun-np2"]
    assert twin["status"] == "passed", twin  # the run went on after the failed cell
    twin_results = (runs / "killed" / twin["repeats"][0]["results"]).read_bytes()
    assert manifest["complete"] is True
    assert cli(["run", "--resume", str(runs / "killed")]) == 0
    manifest = json.loads((runs / "killed" / "manifest.json").read_text())
    assert all(c["status"] == "passed" for c in manifest["cells"]), manifest["cells"]
    assert (runs / "killed" / twin["repeats"][0]["results"]).read_bytes() == twin_results


def test_runner_names_a_killed_launcher(tmp_path, monkeypatch):
    """The launcher itself killed mid-cell (torchrun's agent, SIGKILL: the OOM killer's
    way): the cell's error says so, not the launcher's command line echoed from the log
    (before), and none of the cell's ranks is left."""
    runs = tmp_path / "runs"
    args = ["run", "--backends", "ddp-gloo", "--world-sizes", "2", "--workloads", "mlp",
            "--runs-dir", str(runs), "--name", "launcher", "--allow-failures", "--repeat",
            "1", "--suites", "throughput", "--suite-args", TINY_RUN_SUITE_ARGS]
    marker = f"hvd-killed-launcher-{uuid.uuid4().hex}"
    injected = {"HVD_VS_DDP_TEST_KILL_RANK": "1", "HVD_VS_DDP_TEST_KILL_LAUNCHER": "1",
                "PYTEST_PLUGINS": "tests.plugins.kill_rank", "HVD_TEST_MARKER": marker}
    _run_with(monkeypatch, injected, args)
    manifest = json.loads((runs / "launcher" / "manifest.json").read_text())
    (cell,) = manifest["cells"]
    assert cell["status"] == "failed", cell
    assert cell["error"] == ("ddp-gloo-torchrun-np2: the launcher (torchrun) was killed by "
                             "signal 9 (SIGKILL); the cell's ranks were ended with it"), cell
    time.sleep(0.5)
    assert leftovers(marker) == [], "a rank outlived its killed launcher"

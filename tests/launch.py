"""Shared launch helpers of the tests: start real ranks under a launcher, explain output.

Every test that starts processes goes through these (tests/system/*), so environment,
time limits and skips for a missing launcher work the same everywhere.

    from tests.launch import ROOT, TINY_SUITE_ARGS, explain, launched
"""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.common.processes import marked
from hvd_vs_ddp.harness.pytest_args import CELL_PLUGINS

ROOT = Path(__file__).resolve().parents[1]

# The plugins of a rank's pytest, as `hvd-vs-ddp run` gives its cells: pytest-benchmark
# alone. This environment also installs the unit tests' plugins (Hypothesis's, anyio's,
# xdist): loading them cost every rank about 1 s of CPU at start-up here, with nothing
# of theirs used. One job keeps them (tests/system/jobs.py, the mission's command as typed).
LEAN_PLUGINS = list(CELL_PLUGINS)
# The suites shrunk to seconds: what the launcher tests pass after `pytest suites/`.
# (Convergence on mlp only: gpt's runs in the jobs of tests/system/jobs.py that name it.)
TINY_SIZES = ["--workloads", "mlp", "--convergence-workloads", "mlp", "--rounds", "2",
              "--steps-per-round", "1", "--warmup-steps", "1", "--convergence-steps", "5",
              "--max-bytes", "65536", "--collective-iters", "5",
              "--test-time-limit", "300", "-p", "no:cacheprovider", "-q"]
TINY_SUITE_ARGS = [*LEAN_PLUGINS, *TINY_SIZES]
# The same for `hvd-vs-ddp run --suite-args`: its cells run every suite at these sizes,
# but time to accuracy (digits trained to 95%: 180 steps, the longest test of a cell; the
# tests that run these cells are about the runner, and tests/system/jobs.py times it
# under every launcher).
TINY_RUN_SUITE_ARGS = ("--rounds 2 --steps-per-round 1 --warmup-steps 1 --convergence-steps 3 "
                       "--max-bytes 4096 --collective-iters 5 --convergence-workloads mlp "
                       "-k 'not time_to_accuracy'")


def default_stop_signals(ignore: tuple[int, ...] = ()) -> None:
    """In a child, before exec (Popen's preexec_fn): SIGINT, SIGTERM and SIGHUP at their
    defaults (or ignored, those in `ignore`), whatever this test process inherited: a job
    started under nohup ignores SIGHUP, one in the background of a script ignores SIGINT,
    and an ignored signal stays ignored across exec, so a test that sends one would see
    nothing happen."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN if s in ignore else signal.SIG_DFL)


def launched(launcher: str, nprocs: int, argv: list[str], timeout: float = 300,
             extra_env: dict[str, str] | None = None, cwd: Path = ROOT,
             unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run `python argv...` on nprocs ranks; pytest.skip if the launcher is missing.
    `unset` names variables removed from the launcher's environment."""
    avail = launchers.available(launcher)
    if not avail:
        pytest.skip(f"{launcher}: {avail.reason}")
    env = launchers.env(launcher=launcher)
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env.update(extra_env or {})
    for name in unset:
        env.pop(name, None)
    cmd = launchers.command(launcher, nprocs, argv)
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(cmd)} did not finish in {timeout}s:\n"
                    f"{(exc.stdout or '')[-3000:]}\n{(exc.stderr or '')[-3000:]}")


def explain(proc: subprocess.CompletedProcess) -> str:
    return (f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n"
            f"--- stderr ---\n{proc.stderr[-6000:]}")


def horovod_available() -> tuple[bool, str]:
    from hvd_vs_ddp.backends import registry
    avail = registry.availability("horovod")
    return avail.ok, avail.reason


def leftovers(marker: str) -> list[int]:
    """PIDs whose environment carries this run's marker (HVD_TEST_MARKER=marker)."""
    return marked("HVD_TEST_MARKER", marker)

"""hvd_vs_ddp/cli/cell_errors.py without processes: the dead rank read from recorded launcher logs.

tests/fixtures/dead_rank/<launcher>.log are the real combined output of each launcher,
recorded by tests/system/test_dead_rank.py (HVD_VS_DDP_RECORD_DEAD_RANK=DIR) while rank 1
of 2 was SIGKILLed (mpich-without-guard.log: MPICH's mpiexec running
tests/ranks/die_rank.py without hvd_vs_ddp/harness/rank_guard.py); each must give exactly the line
in RECORDED. Short
hand-made logs pin the rules: the root cause before collateral deaths, a PID turned
into a rank by the ranks' start lines, start lines and warnings never the error.

    python -m pytest tests/unit/test_cell_errors.py -q
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.cli.cell_errors import dead_rank, error_line, main
from hvd_vs_ddp.harness import rank_guard, rank_started

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dead_rank"
RECORDED = {
    "mpirun": "rank 1 (pid 17124 on vm) was killed by signal 9 (SIGKILL)",  # Open MPI 4.1.4
    "openmpi5": "rank 1 (pid 17689 on vm) was killed by signal 9 (SIGKILL)",  # 5.0.11
    "mpich": "rank 1 (pid 17703 on vm) was killed by signal 9 (SIGKILL)",  # Hydra + guard
    # Hydra alone names the lowest failed rank: rank 0, which it killed itself.
    "mpich-without-guard": "rank 0 (pid 18314 on vm) was killed by signal 9 (SIGKILL)",
    "srun": "rank 1 (pid 17820 on vm) was killed by signal 9 (SIGKILL)",  # Slurm 22.05
    "torchrun": "rank 1 (pid 17247 on localhost) was killed by signal 9 (SIGKILL)",
    "horovodrun-gloo":
        "rank 1 (pid 17443 on vm) was killed by signal 9 (SIGKILL; horovodrun status 137)",
    "horovodrun-mpi": "rank 1 (pid 17550 on vm) was killed by signal 9 (SIGKILL)",
}


def test_every_recorded_log_is_checked():
    assert sorted(p.stem for p in FIXTURES.glob("*.log")) == sorted(RECORDED)


@pytest.mark.parametrize("launcher", sorted(RECORDED))
def test_recorded_kill(launcher):
    log = (FIXTURES / f"{launcher}.log").read_text()
    assert error_line(log, 1, False, 0) == RECORDED[launcher]


def _started(*ranks: tuple[int, int, str]) -> str:
    return "".join(rank_started.line(r, 2, pid, host) + "\n" for r, pid, host in ranks)


HYDRA_OLD = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 4242 RUNNING AT node2
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
"""


def test_a_pid_becomes_a_rank_through_the_start_lines():
    log = _started((0, 4242, "node1"), (1, 4242, "node2.example.org")) + HYDRA_OLD
    assert error_line(log, 9, False, 0) == \
        "rank 1 (pid 4242 on node2) was killed by signal 9 (SIGKILL)"


def test_a_pid_without_a_start_line_stays_a_pid():
    assert error_line(HYDRA_OLD, 9, False, 0) == \
        "a process (pid 4242 on node2) that had not said its rank was killed by signal 9 " \
        "(SIGKILL)"


def test_start_lines_and_warnings_are_never_the_error():
    log = (_started((0, 11, "h"), (1, 12, "h")) +
           "hvd-vs-ddp: warning: 2 ranks x 4 threads exceed the node's 2 cores\n"
           "srun: error: h: task 1: Killed\nsrun: error: h: task 0: Terminated\n")
    assert error_line(log, 137, False, 0) == \
        "rank 1 (pid 12 on h) was killed by signal 9 (SIGKILL)"


def test_a_project_error_line_says_why_first():
    log = (_started((0, 11, "h"), (1, 12, "h")) +
           "hvd-vs-ddp: rank 1 of 2 (host h, pid 12) is stuck in t.py::x: time limit 5s "
           "exceeded; aborting the job\nsrun: error: h: task 1: Exited with exit code 70\n")
    assert "is stuck in t.py::x" in error_line(log, 70, False, 0)
    assert dead_rank(log).describe() == "rank 1 (pid 12 on h) exited with code 70"


def test_the_root_cause_beats_collateral_deaths():
    # srun: first reported first; torchrun: its "Root Cause" block, though printed last.
    srun = "srun: error: h: task 1: Killed\nsrun: error: h: tasks 0,2: Killed\n" \
           "srun: error: h: task 0: Exited with exit code 1\n"
    assert dead_rank(srun).rank == 1
    torchrun = """Failures:
[1]:
  time      : 2026-11-22_20:00:01
  host      : h
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 11)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_20:00:00
  host      : h
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 12)
"""
    assert error_line(torchrun, 1, False, 0) == \
        "rank 1 (pid 12 on h) was killed by signal 9 (SIGKILL)"


def test_horovodrun_status_128_plus_n_is_signal_n():
    log = ("Process 0 exit with status code 1.\nProcess 1 exit with status code 137.\n"
           "Terminating remaining workers after failure of Process 1.\n")
    assert error_line(log, 1, False, 0) == \
        "rank 1 was killed by signal 9 (SIGKILL; horovodrun status 137)"


def test_the_first_rank_guard_line_is_the_dead_rank():
    # Wait statuses as os.waitpid gives them: killed by 9; exited with 3; killed by 15.
    first = rank_guard.line(1, 3, 12, "h", 9)
    assert first == "hvd-vs-ddp: rank 1 of 3 (pid 12 on host h) was killed by signal 9 (SIGKILL)"
    log = "\n".join([_started((0, 11, "h"), (1, 12, "h")), first,
                     rank_guard.line(2, 3, 13, "h", 3 << 8),
                     rank_guard.line(0, 3, 11, "h", 15), HYDRA_OLD.replace("4242", "11")])
    assert error_line(log, 9, False, 0) == "rank 1 (pid 12 on h) was killed by signal 9 (SIGKILL)"
    assert dead_rank(rank_guard.line(2, 3, 13, "h", 3 << 8)).describe() == \
        "rank 2 (pid 13 on h) exited with code 3"


def test_open_mpi_exit_code():
    log = """mpirun detected that one or more processes exited with non-zero status, thus
causing the job to be terminated. The first process to do so was:

  Process name: [[31639,1],1]
  Exit code:    3
"""
    assert error_line(log, 3, False, 0) == "rank 1 exited with code 3"


def test_without_a_dead_rank_the_old_rules_hold():
    assert error_line("", 0, True, 60) == "cell exceeded its time limit of 60s and was killed"
    assert error_line("collected 0 items\n", 5, False, 0) == "pytest collected or ran no test"
    assert error_line("a\nFAILED suites/x.py::t - boom\nb\n", 1, False, 0) == \
        "FAILED suites/x.py::t - boom"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_log_gives_one_short_line(log):
    line = error_line(log, 1, False, 0)
    assert "\n" not in line.strip() and 0 < len(line) <= 400


def test_command_line(tmp_path, capsys):
    log = tmp_path / "cell.log"
    log.write_text("srun: error: h: task 1: Killed\n")
    assert main([str(log)]) == 0
    assert capsys.readouterr().out == "rank 1 (on h) was killed by signal 9 (SIGKILL)\n"
    assert main([str(tmp_path / "missing.log")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hvd-vs-ddp: error: cannot read ")


def test_a_killed_launcher_is_named_when_no_rank_died_first():
    """The launcher killed by a signal (its status negative), or a process it ran through a
    shell (horovodrun --mpi's mpirun: the shell says "Killed", the status is 128 + 9). A
    rank's death reported before wins; a "Killed" without the matching status is not it."""
    log = "$ torchrun --nproc-per-node 2 ...\n" + _started((0, 11, "h"), (1, 12, "h"))
    assert error_line(log, -9, False, 0, "torchrun") == (
        "the launcher (torchrun) was killed by signal 9 (SIGKILL); the cell's ranks were "
        "ended with it")
    assert error_line(log + "Killed\n", 137, False, 0, "horovodrun-mpi") == (
        "a process of the launcher (horovodrun-mpi) was killed by signal 9 (SIGKILL); the "
        "cell's ranks were ended with it")
    assert "launcher" not in error_line(log + "Killed\n", 1, False, 0, "horovodrun-mpi")
    rank_died = log + "srun: error: h: task 1: Killed\n"
    assert error_line(rank_died, -9, False, 0, "srun") == \
        "rank 1 (pid 12 on h) was killed by signal 9 (SIGKILL)"
    # the `single` launcher's one process is rank 0 itself
    one = "$ python -m pytest ...\n" + _started((0, 11, "h"))
    assert error_line(one, -9, False, 0, "single") == \
        "rank 0 (pid 11 on h) was killed by signal 9 (SIGKILL)"

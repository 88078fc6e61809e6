"""A failed cell's one-line error, read from its log: above all, which rank died and how.

`hvd-vs-ddp run` records every failed cell with one line (the manifest's `error`). When a
rank died, that line names the rank that died first (the root cause, not the ranks the
launcher ended after it) with its signal or exit code, e.g. "rank 1 (pid 4242 on n1) was
killed by signal 9 (SIGKILL)". Each launcher reports a death its own way:

- Open MPI 4 and 5 (mpirun; 5 is PRRTE's prterun and wraps the line): "mpirun noticed
  that process rank 1 with PID 0 on node n1 exited on signal 9 (Killed).", or for an exit
  code "The first process to do so was: Process name: [[31639,1],1] Exit code: 3";
- MPICH's Hydra mpiexec: a "BAD TERMINATION" box, "PID 4242 RUNNING AT n1" and "EXIT
  CODE: 9" (newer: "RANK 1 PID ..." and "KILLED BY SIGNAL: 9"), but for the lowest failed
  rank, which after Hydra's clean-up is rank 0 whoever died first. So the `mpiexec` row
  starts each rank under hvd_vs_ddp/harness/rank_guard.py, whose line "hvd-vs-ddp: rank 1 of 2 (pid
  4243 on host n1) was killed by signal 9 (SIGKILL)" is out before Hydra kills anyone else;
- Slurm's srun: "srun: error: n1: task 1: Killed" / "... task 1: Exited with exit code 3";
- torchrun: its "Root Cause (first observed failure)" block (rank, exitcode -9);
- horovodrun --gloo: "Terminating remaining workers after failure of Process 1." and
  "Process 1 exit with status code 137." (its shell's status: 128+N is signal N);
- horovodrun --mpi: Open MPI 4's lines, as mpirun.

A launcher's own "first failure" wins, else the first report in the log. The line every
rank writes when it starts (hvd_vs_ddp/harness/rank_started.py: "hvd-vs-ddp: rank 1 of 2 started:
pid 4242 on host n1") turns a PID into a rank, and gives a rank its PID and host.

A project line that says why ("hvd-vs-ddp: error: ...", a watchdog's "... is stuck ...;
aborting the job") still comes before the dead rank; start lines, rank guards' lines and
warnings never count as one. tests/unit/test_cell_errors.py reads recorded launcher logs
(tests/fixtures/dead_rank/); tests/system/test_dead_rank.py kills a real rank under each.

    python -m hvd_vs_ddp.cli.cell_errors runs/<run>/logs/<cell>.log     # prints the line
"""
from __future__ import annotations

import dataclasses
import re
import signal
import sys
from pathlib import Path
from typing import Callable, Iterator

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.common.errors import EXIT_BAD_INPUT
from hvd_vs_ddp.harness import rank_guard, rank_started


@dataclasses.dataclass(frozen=True)
class DeadRank:
    """One process a launcher reported as failed."""

    rank: int | None
    exit_code: int | None = None
    signal: int | None = None
    pid: int | None = None
    host: str | None = None
    note: str = ""  # how the launcher put it, where that is worth keeping

    def describe(self) -> str:
        where = " ".join(x for x in (f"pid {self.pid}" if self.pid else "",
                                     f"on {self.host}" if self.host else "") if x)
        if self.rank is not None:
            who = f"rank {self.rank}" + (f" ({where})" if where else "")
        else:
            who = (f"a process ({where}) that had not said its rank"
                   if where else "a process of unknown rank")
        note = f"; {self.note}" if self.note else ""
        if self.signal is not None:
            how = f"was killed by signal {self.signal} ({signal_name(self.signal)}{note})"
        elif self.exit_code is not None:
            how = f"exited with code {self.exit_code}" + (f" ({self.note})" if note else "")
        else:
            how = "failed" + (f" ({self.note})" if note else "")
        return f"{who} {how}"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


# What srun (glibc's strsignal) prints for a signal: "Killed", "Terminated", ...
_SIGNAL_WORDS = {signal.strsignal(s) or "": int(s) for s in signal.valid_signals()
                 if signal.strsignal(s)}


# Each reader yields (priority, offset in the log, DeadRank). Priority 0: the launcher
# itself says this was the first failure; 1: a failure report, in the order printed.
Found = Iterator[tuple[int, int, DeadRank]]


def _torchrun(log: str) -> Found:
    for m in re.finditer(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)"
                         r"(?:\s*\(pid:\s*(\d+)\))?", log, re.S):
        host = re.search(r"host\s*:\s*(\S+)", log[m.start():m.end()])
        code = int(m.group(2))
        yield 0, m.start(), DeadRank(int(m.group(1)), None if code < 0 else code,
                                     -code if code < 0 else None,
                                     int(m.group(3)) if m.group(3) else None,
                                     host.group(1) if host else None)


def _open_mpi(log: str) -> Found:
    # 4: "mpirun noticed that process rank 1 with PID 4242 on node n1 exited on signal 9
    # (Killed)."; 5 writes "prterun noticed ..." and wraps the line.
    for m in re.finditer(r"noticed\s+that\s+process\s+rank\s+(\d+)\s+with\s+PID\s+(\d+)\s+"
                         r"on\s+node\s+(\S+)\s+exited\s+on\s+signal\s+(\d+)", log):
        yield 1, m.start(), DeadRank(int(m.group(1)), None, int(m.group(4)),
                                     int(m.group(2)) or None, m.group(3))
    # An exit code: "The first process to do so was: Process name: [[31639,1],1] Exit
    # code: 3" (5: "[prterun-n1-4242@1,1]"). Horovodrun's Gloo mode says "Process name: 1".
    for m in re.finditer(r"first process\s+to\s+do\s+so\s+was:\s*Process name:\s*"
                         r"(?:\[(?:\[\d+,\d+\]|[^\[\],\s]+),(\d+)\]|(\d+))\s*"
                         r"Exit code:\s*(-?\d+)", log):
        rank = int(m.group(1) or m.group(2))
        yield 0, m.start(), _shell_status(rank, int(m.group(3)), bool(m.group(2)))


def _shell_status(rank: int, code: int, via_shell: bool) -> DeadRank:
    """horovodrun runs each rank through a shell: status 128+N means signal N."""
    if code < 0:
        return DeadRank(rank, None, -code)
    if via_shell and 128 < code <= 128 + 64:
        return DeadRank(rank, None, code - 128, note=f"horovodrun status {code}")
    return DeadRank(rank, code)


def _horovodrun(log: str) -> Found:
    codes: dict[int, int] = {}
    for m in re.finditer(r"Process (\d+) exit with status code (-?\d+)\.", log):
        rank, code = int(m.group(1)), int(m.group(2))
        codes.setdefault(rank, code)
        yield 1, m.start(), _shell_status(rank, code, True)
    for m in re.finditer(r"Terminating remaining workers after failure of Process (\d+)", log):
        rank = int(m.group(1))
        if rank in codes:
            yield 0, m.start(), _shell_status(rank, codes[rank], True)


def _hydra(log: str) -> Found:
    # =   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
    # =   RANK 1 PID 4242 RUNNING AT n1            (older Hydra: "=   PID 4242 RUNNING AT n1")
    # =   KILLED BY SIGNAL: 9 (Killed)             (or "=   EXIT CODE: 3")
    for m in re.finditer(r"BAD TERMINATION.*?\n=\s*(?:RANK\s+(\d+)\s+)?PID\s+(\d+)\s+RUNNING\s+"
                         r"AT\s+(\S+)\s*\n=\s*(?:KILLED BY SIGNAL:\s*(\d+)|EXIT CODE:\s*(\d+))",
                         log, re.S):
        rank = int(m.group(1)) if m.group(1) else None
        sig = int(m.group(4)) if m.group(4) else None
        code = int(m.group(5)) if m.group(5) else None
        # Old Hydra writes a signal as its EXIT CODE and says "(signal N)" further down.
        said = re.search(r"EXIT STRING:.*\(signal (\d+)\)", log[m.end():m.end() + 600])
        if code is not None and said and int(said.group(1)) == code:
            sig, code = code, None
        yield 1, m.start(), DeadRank(rank, code, sig, int(m.group(2)), m.group(3))


def _srun(log: str) -> Found:
    # "srun: error: n1: task 1: Killed" / "srun: error: n1: task 1: Exited with exit code 3"
    # ("tasks 0-1: ..." when several ended alike: collateral, never alone the root cause).
    for m in re.finditer(r"srun: error: (\S+): task (\d+): ([^\n]+)", log):
        what = m.group(3).strip()
        code = re.match(r"Exited with exit code (\d+)", what)
        sig = _SIGNAL_WORDS.get(what.split(" (core dumped)")[0])
        if code or sig:
            yield 1, m.start(), DeadRank(int(m.group(2)), int(code.group(1)) if code else None,
                                         sig, host=m.group(1))


def _guard(log: str) -> Found:
    # hvd_vs_ddp/harness/rank_guard.py (mpiexec's ranks): "hvd-vs-ddp: rank 1 of 2 (pid 4243 on host
    # n1) was killed by signal 9 (SIGKILL)", written before the launcher heard of it.
    for m in rank_guard.PATTERN.finditer(log):
        yield 0, m.start(), DeadRank(int(m.group(1)),
                                     int(m.group(5)) if m.group(5) else None,
                                     int(m.group(4)) if m.group(4) else None,
                                     int(m.group(2)), m.group(3))


READERS: tuple[Callable[[str], Found], ...] = (_guard, _torchrun, _open_mpi, _horovodrun,
                                               _hydra, _srun)


def _started(log: str) -> list[tuple[int, int, str]]:
    """(rank, pid, host) of every rank's start line (hvd_vs_ddp/harness/rank_started.py)."""
    return [(int(m.group(1)), int(m.group(3)), m.group(4))
            for m in rank_started.PATTERN.finditer(log)]


def _short(host: str) -> str:
    return host.split(".")[0]


def _with_rank(dead: DeadRank, started: list[tuple[int, int, str]]) -> DeadRank:
    """The rank of a process known by PID (and host), or the PID and host of a rank,
    from the ranks' start lines."""
    if dead.rank is not None:
        if dead.pid is not None:
            return dead
        known = [(pid, host) for r, pid, host in started if r == dead.rank]
        if len(known) != 1:
            return dead
        return dataclasses.replace(dead, pid=known[0][0], host=dead.host or known[0][1])
    if dead.pid is None:
        return dead
    ranks = {r for r, pid, host in started if pid == dead.pid and
             (dead.host is None or _short(host) == _short(dead.host))}
    if len(ranks) != 1:  # on several hosts a PID may repeat: without its host, no guess
        ranks = {r for r, pid, _ in started if pid == dead.pid}
    return dataclasses.replace(dead, rank=ranks.pop()) if len(ranks) == 1 else dead


def dead_rank(log: str) -> DeadRank | None:
    """The rank whose death ended the job, as the launcher reported it; None if no
    launcher reported one. The launcher's own "first failure" wins, else the first
    report in the log."""
    found = [(priority, at, dead) for reader in READERS for priority, at, dead in reader(log)]
    if not found:
        return None
    first = min(found, key=lambda f: (f[0], f[1]))[2]
    return _with_rank(first, _started(log))


def _says_why(line: str) -> bool:
    """A project line that explains a failure: not a start line, not a rank guard's
    report (read as a dead rank: the first wins), not a warning."""
    return ("hvd-vs-ddp:" in line and not rank_started.PATTERN.search(line)
            and not rank_guard.PATTERN.search(line) and "hvd-vs-ddp: warning:" not in line)


def _launcher_killed(lines: list[str], returncode: int, launcher: str) -> str | None:
    """The launcher itself killed by a signal: its status is negative; or a process it
    ran through a shell was (horovodrun --mpi's mpirun: the shell's last word, "Killed",
    and 128 + the signal as the status)."""
    who = f"the launcher ({launcher})" if launcher else "the launcher"
    if returncode < 0:
        return (f"{who} was killed by signal {-returncode} ({signal_name(-returncode)}); "
                "the cell's ranks were ended with it")
    said = _SIGNAL_WORDS.get(lines[-1].split(" (core dumped)")[0]) if lines else None
    if said is not None and returncode == 128 + said:
        return (f"a process of {who} was killed by signal {said} ({signal_name(said)}); "
                "the cell's ranks were ended with it")
    return None


def error_line(log: str, returncode: int, timed_out: bool, limit: float,
               launcher: str = "") -> str:
    """One line for a failed cell: its time limit, the launcher itself killed by a signal
    (a negative `returncode`: the OOM killer, a kill -9) where no rank died before it, a
    project error line, the dead rank, a failure line of pytest, or the log's last line
    (at most 400 characters)."""
    if timed_out:
        return f"cell exceeded its time limit of {limit:.0f}s and was killed"
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    if launcher and not launchers.starts_ranks(launcher) and returncode < 0:  # it is rank 0
        return _with_rank(DeadRank(0, None, -returncode), _started(log)).describe()
    dead = dead_rank(log)
    launcher_killed = _launcher_killed(lines, returncode, launcher)
    if launcher_killed and dead is None:  # no rank's death led to it
        return launcher_killed
    ours = [ln for ln in lines if _says_why(ln)]
    if ours:
        return ours[-1][:400]
    if dead:
        return dead.describe()[:400]
    for key in ("rank(s) ", "Error:", "FAILED ", "E  "):
        hits = [ln for ln in lines if key in ln]
        if hits:
            return hits[-1][:400]
    if returncode == 5:
        return "pytest collected or ran no test"
    return (lines[-1][:400] if lines else f"exit code {returncode}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("hvd-vs-ddp: error: usage: python -m hvd_vs_ddp.cli.cell_errors LOGFILE",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        text = Path(args[0]).read_text(errors="replace")
    except OSError as exc:
        print(f"hvd-vs-ddp: error: cannot read {args[0]}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(error_line(text, 1, False, 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One runner per run directory, and what a killed runner left behind.

`hvd-vs-ddp run` holds an flock on its run directory while it works in it (released when
the process ends, however it ends); a second runner of the same run is refused with one
line (RunBusy). A runner killed outright (SIGKILL, the OOM killer) could not end its
cell: every cell's processes carry a marker under the run's `marker_root`, and the next
runner of that run ends whatever still carries one before it starts a cell, so no
orphaned rank competes with, or writes the results file of, the cell that reruns. On a
file system without locks (some NFS mounts) the run goes on with a note.

    lock = RunLock(Path("runs/<name>")); lock.claim(); ...; lock.release()
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from hvd_vs_ddp.common import processes
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.log import log

CELL_MARKER = "HVD_VS_DDP_CELL"  # the variable every process of a cell carries


class RunBusy(InputError):
    """Another runner holds the run directory."""


def marker_root(run_dir: Path) -> str:
    """Every cell marker of this run starts with it (the run directory, absolute)."""
    return f"{run_dir.resolve()}/"


class RunLock:
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._fd: int | None = None  # the locked descriptor; -1 where locks do not exist

    def claim(self) -> None:
        """Lock the run directory (RunBusy if another runner holds it), then end the
        processes an earlier runner of this run left behind. Idempotent."""
        if self._fd is not None:
            return
        fd = os.open(self.run_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunBusy(f"{self.run_dir} is being run by another `hvd-vs-ddp run` right "
                          "now; wait for it to finish or stop it, then resume") from None
        except OSError as exc:  # a file system without locks (some NFS mounts): run on
            os.close(fd)
            log.info(f"note: {self.run_dir} cannot be locked ({exc.strerror}); a second "
                     "runner of this run would not be refused")
            fd = -1
        self._fd = fd
        left = processes.end_marked(CELL_MARKER, marker_root(self.run_dir), prefix=True)
        if left:
            log.info(f"ended {len(left)} process(es) of this run left running by an earlier "
                     f"runner that did not end them (killed?): {left}")

    def release(self) -> None:
        """Unlock the run directory (a process's exit does it too)."""
        if self._fd is not None:
            if self._fd >= 0:
                os.close(self._fd)  # closing the locked descriptor releases the flock
            self._fd = None

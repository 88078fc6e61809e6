"""MPIWork: the torch.distributed Work handle of one queued mpi4py collective.

Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

import datetime
import time
from typing import Any

import torch.distributed as dist
from torch.futures import Future

from .common import CollectiveTimeout
from .engine import _engine, _Op

# ------------------------------------------------------------------ Work

class MPIWork(dist.Work):
    """Handle of one queued collective: wait(timeout) and get_future()."""

    def __init__(self, op: _Op):
        super().__init__()
        self._op = op

    def wait(self, timeout: Any = None) -> bool:
        """Block until done. Without a timeout (None, or C++'s 0 ms) wait until the op's
        deadline (group timeout), then fail it as the watchdog would; with a timeout,
        raise CollectiveTimeout when it passes but leave the op running."""
        op = self._op
        secs = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
        if not secs or secs <= 0:
            if not op.event.wait(max(0.0, op.deadline - time.monotonic())):
                _engine().expire(op)
                op.event.wait()  # settled by expire(), or by a completion that just won
        elif not op.event.wait(secs):
            raise CollectiveTimeout(f"{op.label}: not finished within Work.wait({secs:.1f} s)"
                                    "; it is still running")
        if op.error is not None:
            raise type(op.error)(str(op.error))
        return True

    def get_future(self) -> Future:
        return self._op.future

    def is_completed(self) -> bool:
        return self._op.event.is_set()

    def is_success(self) -> bool:
        return self._op.event.is_set() and self._op.error is None

    def exception(self):
        return self._op.error

    def result(self):
        self.wait()
        return self._op.result

    def synchronize(self) -> None:
        self.wait()

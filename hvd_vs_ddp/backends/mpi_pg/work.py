"""MPIWork: the torch.distributed Work handle of one mpi4py collective.

wait() returns at once for an operation that ran inline (it is settled before its
Work exists); for a queued one it blocks on the op's latch, at most until the op's
deadline, then fails it as the watchdog would. get_future() hands out the op's torch
Future, created on first request (DDP chains .then() on it and waits from C++; the
communication thread completes it).
"""
from __future__ import annotations

import datetime
import time
from typing import Any

import torch.distributed as dist
from torch.futures import Future

from .common import CollectiveTimeout
from .engine import _Engine
from .op import Op


class MPIWork(dist.Work):
    """Handle of one collective: wait(timeout), get_future(), is_completed()."""

    def __init__(self, op: Op, engine: _Engine):
        super().__init__()
        self._op = op
        self._engine = engine

    def wait(self, timeout: Any = None) -> bool:
        """Block until done. Without a timeout (None, or C++'s 0 ms) wait until the op's
        deadline (group timeout), then fail it as the watchdog would; with a timeout,
        raise CollectiveTimeout when it passes but leave the op running."""
        op = self._op
        if not op.done:
            secs = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) \
                else timeout
            eng = self._engine
            if not secs or secs <= 0:
                if not eng.wait(op, max(0.0, op.deadline - time.monotonic())):
                    eng.expire(op)
                    eng.wait(op, None)  # settled by expire(), or by a completion that won
            elif not eng.wait(op, secs):
                raise CollectiveTimeout(f"{op.label}: not finished within Work.wait("
                                        f"{secs:.1f} s); it is still running")
        if op.error is not None:
            raise type(op.error)(str(op.error))
        return True

    def get_future(self) -> Future:
        return self._engine.future(self._op)

    def is_completed(self) -> bool:
        return self._op.done

    def is_success(self) -> bool:
        return self._op.done and self._op.error is None

    def exception(self):
        return self._op.error

    def result(self):
        self.wait()
        return self._op.result

    def synchronize(self) -> None:
        self.wait()

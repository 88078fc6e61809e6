"""Op: the record of one collective (or communicator task) and its completion state.

What it is (for error messages, formatted only when needed), the MPI call to make,
the buffers MPI may touch until it is done, what to copy back afterwards, and how it
ended: `done` with a result or an error, a latch for waiters, a torch Future made on
demand. The groups create them; the engine (engine.py) runs them.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from torch.futures import Future


class Op:
    """One collective (or a communicator task) and its completion state.

    `group` is the MPIProcessGroup (None for tasks); `what` is (opname, sequence
    number, dtype, numel, ReduceOp name) for the label, formatted only when needed
    (errors).
    `done` is set once the result (or error) is published; `latch` (a held lock, only
    for queued ops) is released then; `future` is created on demand (get_future)."""

    __slots__ = ("call", "claimed", "deadline", "done", "error", "finish", "future", "group",
                 "id", "inline", "keep", "latch", "result", "stream", "task", "timeout_s",
                 "what")
    _ids = itertools.count()

    def __init__(self, group: Any, what: Any, timeout_s: float,
                 call: tuple[str, tuple] | None = None, task: Callable[[], Any] | None = None,
                 finish: Callable[[], None] | None = None, result: Any = None,
                 keep: tuple = (), stream: Any = None):
        self.id = next(Op._ids)
        self.group, self.what, self.timeout_s = group, what, timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.call, self.task, self.finish, self.result = call, task, finish, result
        self.keep, self.stream = keep, stream  # keep buffers alive; CUDA stream to copy on
        self.error: BaseException | None = None
        self.claimed = self.done = self.inline = False  # claimed: completer or watchdog
        self.latch: threading.Lock | None = None  # held until a queued op is settled
        self.future: Future | None = None

    @property
    def label(self) -> str:
        return str(self.what) if self.group is None else self.group._op_label(*self.what)


def publish(fut: Future, op: Op) -> None:
    """Hand op's outcome to its torch Future (runs its .then() callbacks here)."""
    if op.error is None:
        fut.set_result(op.result)
    else:
        fut.set_exception(op.error)

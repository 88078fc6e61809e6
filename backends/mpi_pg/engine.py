"""Engine of the mpi4py process group: the one communication thread and the watchdog.

Every MPI call of the process runs on this thread (modes "thread", "nonblocking";
"sync" runs them on the caller). _ENGINE and _MODE are this module's globals: other
modules read and set them through the module (engine._ENGINE), never by copy.
Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch.futures import Future

from .common import _ABORT_ENV, _PROGRESS_ENV, PROGRESS_MODES, CollectiveTimeout, _mpi

if TYPE_CHECKING:
    from .group import MPIProcessGroup

# --------------------------------------------------------------------- engine

class _Op:
    """One queued collective (or a communicator task) and its completion state."""

    _ids = itertools.count()

    def __init__(self, label: str, group: "MPIProcessGroup | None", timeout_s: float,
                 call: tuple[str, tuple] | None = None, task: Callable[[], Any] | None = None,
                 finish: Callable[[], None] | None = None, result: Any = None,
                 keep: tuple = (), stream: Any = None):
        self.id = next(_Op._ids)
        self.label, self.group, self.timeout_s = label, group, timeout_s
        self.call, self.task, self.finish, self.result = call, task, finish, result
        self.keep, self.stream = keep, stream  # keep buffers alive; CUDA stream to copy on
        self.deadline = time.monotonic() + timeout_s
        self.future: Future = Future()
        self.event = threading.Event()
        self.error: BaseException | None = None
        self.finished = False


class _Engine:
    """The one communication thread (all MPI calls) and a watchdog for timeouts."""

    def __init__(self, mode: str):
        MPI = _mpi()
        self.provided = MPI.Query_thread()
        if mode != "sync" and self.provided < MPI.THREAD_SERIALIZED:
            mode = "sync"  # MPI may not be called from our thread at all
        self.mode = mode
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[_Op] = deque()
        self._inflight: dict[int, _Op] = {}
        self._stop = False
        self._expired = 0  # operations failed by timeout
        self._stopped = threading.Event()
        self._thread = None
        if mode != "sync":
            loop = self._loop_blocking if mode == "thread" else self._loop_nonblocking
            self._thread = threading.Thread(target=loop, name="mpi4py-pg-comm", daemon=True)
            self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="mpi4py-pg-watchdog",
                                          daemon=True)
        self._watchdog.start()
        atexit.register(self.stop)  # registered after mpi4py's: runs before MPI_Finalize

    # -- submission (caller's thread) --
    def submit(self, op: _Op) -> _Op:
        group = op.group
        if group is not None and group._broken:
            raise RuntimeError(f"{op.label}: the group is unusable after an earlier "
                               f"failure: {group._broken}")
        if group is not None and group._closed:
            raise RuntimeError(f"{op.label}: the group was shut down "
                               "(destroy_process_group)")
        with self._cond:
            if self._stop:
                raise RuntimeError(f"{op.label}: the mpi4py process group engine has "
                                   "shut down (interpreter exit)")
            self._inflight[op.id] = op
            if self.mode != "sync":
                self._queue.append(op)
                self._cond.notify()
        if self.mode == "sync":
            self._run_now(op)
        return op

    def call(self, fn: Callable[[], Any], label: str, timeout_s: float) -> Any:
        """Run fn() on the communication thread (communicator creation and freeing)."""
        op = self.submit(_Op(label, None, timeout_s, task=fn))
        if not op.event.wait(timeout_s + 1.0):
            raise CollectiveTimeout(f"{label}: not done after {timeout_s:.0f} s")
        if op.error is not None:
            raise op.error
        return op.result

    # -- communication thread --
    def _take(self, block: bool) -> deque | None:
        with self._cond:
            while block and not self._queue and not self._stop:
                self._cond.wait()
            if self._stop and not self._queue:
                return None
            ops, self._queue = self._queue, deque()
            return ops

    def _start(self, op: _Op, blocking: bool):
        """Run a task, or start/run an MPI call. Returns a Request or None."""
        if op.task is not None:
            op.result = op.task()
            return None
        if op.group._broken:  # never start more MPI work on a communicator in trouble
            raise RuntimeError(f"not started, the group is unusable: {op.group._broken}")
        name, args = op.call
        comm = op.group._comm
        if blocking:
            getattr(comm, name)(*args)
            return None
        return getattr(comm, "I" + name.lower())(*args)

    def _run_now(self, op: _Op) -> None:
        try:
            self._start(op, blocking=True)
        except Exception as exc:  # noqa: BLE001 - handed to the waiter
            self._complete(op, RuntimeError(f"{op.label}: {type(exc).__name__}: {exc}"))
            return
        self._complete(op)

    def _loop_blocking(self) -> None:
        while (ops := self._take(block=True)) is not None:
            while ops:  # popping drops each op (and its buffers) as soon as it is done
                self._run_now(ops.popleft())
        self._stopped.set()

    def _loop_nonblocking(self) -> None:
        active: deque = deque()
        while True:
            ops = self._take(block=not active)
            if ops is None:
                if not active:
                    break
                ops = deque()  # stopping: finish what is in flight
            while ops:
                op = ops.popleft()
                try:
                    req = self._start(op, blocking=False)
                except Exception as exc:  # noqa: BLE001
                    self._complete(op, RuntimeError(f"{op.label}: {type(exc).__name__}: {exc}"))
                    continue
                if req is None:
                    self._complete(op)
                else:
                    active.append((op, req))
            op = req = None
            progressed = False
            for _ in range(len(active)):
                item = active.popleft()
                if item[1].Test():
                    self._complete(item[0])
                    progressed = True
                else:
                    active.append(item)
            item = None
            if active and not progressed:
                time.sleep(0)  # let other Python threads in between polls
        self._stopped.set()

    def _complete(self, op: _Op, error: BaseException | None = None) -> None:
        """MPI is done with op's buffers: copy results back and settle its Future."""
        with self._lock:
            expired = op.finished  # the watchdog failed it already
            op.finished = True
            self._inflight.pop(op.id, None)
        if not expired:
            if error is None and op.finish is not None:
                try:
                    if op.stream is not None:
                        with torch.cuda.stream(op.stream):
                            op.finish()
                        op.stream.synchronize()
                    else:
                        op.finish()
                except Exception as exc:  # noqa: BLE001
                    error = RuntimeError(f"{op.label}: copying the result back failed: {exc}")
            self._settle(op, error)
        # Only now may the staging buffers go: MPI has stopped touching them.
        op.call = op.task = op.finish = op.stream = None
        op.keep = ()

    @staticmethod
    def _settle(op: _Op, error: BaseException | None) -> None:
        op.error = error
        if error is None:
            op.future.set_result(op.result)
        else:
            op.future.set_exception(error)
        op.event.set()

    # -- timeouts --
    def _watch(self) -> None:
        while not self._stopped.wait(0.2):
            self._expire_late()

    def _expire_late(self) -> None:
        # A function of its own, so that no reference to an op outlives this call:
        # a tensor or Future freed by this daemon thread while the interpreter
        # finalises would abort the process (torch releases the GIL in destructors).
        now = time.monotonic()
        with self._lock:
            late = [op for op in self._inflight.values() if now > op.deadline]
        for op in late:
            self.expire(op)

    def expire(self, op: _Op) -> bool:
        """Fail an unfinished op with a timeout error and mark its group unusable."""
        with self._lock:
            if op.finished:
                return False
            op.finished = True
            self._inflight.pop(op.id, None)
            self._expired += 1
        msg = (f"{op.label} timed out after {op.timeout_s:.1f} s: a rank died, is stuck, "
               "or the ranks issued different collectives in different order")
        if op.group is not None and not op.group._broken:
            op.group._broken = msg
        if os.environ.get(_ABORT_ENV, "0") == "1":
            print(f"[mpi4py-pg] {msg}; aborting the job ({_ABORT_ENV}=1)",
                  file=sys.stderr, flush=True)
            _mpi().COMM_WORLD.Abort(1)
        if self.mode == "sync":  # the caller may itself be stuck inside that MPI call
            print(f"[mpi4py-pg] {msg}", file=sys.stderr, flush=True)
        self._settle(op, CollectiveTimeout(msg))
        return True

    def stop(self, timeout_s: float = 30.0) -> None:
        """At exit: let queued work finish, then end our threads before MPI_Finalize.
        A communication thread stuck in MPI (after a timeout) would make Finalize hang
        or crash, so then the job is aborted, as NCCL's watchdog does."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(2.0 if self._expired else timeout_s)
            if self._thread.is_alive():
                print("[mpi4py-pg] at exit the communication thread is still inside MPI "
                      "(a collective that timed out or was never matched); calling "
                      "MPI_Abort so that MPI_Finalize does not hang",
                      file=sys.stderr, flush=True)
                _mpi().COMM_WORLD.Abort(1)
        self._stopped.set()
        self._watchdog.join(timeout_s)


_ENGINE: _Engine | None = None
_ENGINE_LOCK = threading.Lock()
_MODE: str | None = None


def _engine() -> _Engine:
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            _ENGINE = _Engine(_progress_mode())
        return _ENGINE


def _progress_mode() -> str:
    mode = _MODE or os.environ.get(_PROGRESS_ENV, "thread")
    if mode not in PROGRESS_MODES:
        raise ValueError(f"{_PROGRESS_ENV}={mode!r}: expected one of {PROGRESS_MODES}")
    return mode

"""Where and when MPI calls run: the Op record, the communication thread, the watchdog.

One _Engine per process owns every MPI call the package makes, so that no two of them
are ever inside MPI at once (MPI_THREAD_SERIALIZED suffices). submit() decides, per
operation and in program order, where its blocking MPI call runs:
  - on the calling thread ("inline"), when the caller waits for it at once (torch's
    opts.asyncOp is False: dist.all_reduce(t) and friends) and nothing of ours is
    queued or inside MPI: no thread hop, no queue, no Event; mode "sync" always;
  - else on the communication thread, in submission order: async collectives (DDP's
    buckets) overlap the caller's work, and complete their Future from that thread.
Both are blocking MPI collectives (MPI_Allreduce, ...): a blocking collective never
matches a nonblocking one, so the choice must not decide which MPI call runs, only
which thread runs it. Mode "nonblocking" starts MPI_I* calls on the thread instead.
The watchdog fails operations that outlive their deadline (see expire()).
"""
from __future__ import annotations

import atexit
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch
from torch.futures import Future

from .common import ABORT_ENV, CollectiveTimeout, log, mpi
from .op import Op, publish


class _Engine:
    """All MPI calls of the process: inline on the caller, or on one communication
    thread; plus a watchdog thread for timeouts."""

    def __init__(self, mode: str):
        MPI = mpi()
        self.provided = MPI.Query_thread()
        if mode != "sync" and self.provided < MPI.THREAD_SERIALIZED:
            mode = "sync"  # MPI may not be called from our thread at all
        self.mode = mode
        self._inline_ok = mode in ("inline", "sync")
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Op] = deque()
        self._inflight: dict[int, Op] = {}
        self._busy = False  # an op of ours is inside MPI (thread or inline caller)
        self._stop = False
        self._expired = 0  # operations failed by timeout
        self._stopped = threading.Event()
        self._thread = None
        if mode != "sync":
            loop = self._loop_nonblocking if mode == "nonblocking" else self._loop_blocking
            self._thread = threading.Thread(target=loop, name="mpi4py-pg-comm", daemon=True)
            self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="mpi4py-pg-watchdog",
                                          daemon=True)
        self._watchdog.start()
        atexit.register(self.stop)  # registered after mpi4py's: runs before MPI_Finalize

    # -- submission (caller's thread) --
    def submit(self, op: Op, waits: bool) -> Op:
        """Start op: inline when `waits` (the caller waits at once) and MPI is ours and
        idle, else queue it for the communication thread."""
        group = op.group
        if group is not None and (group._broken or group._closed):
            raise RuntimeError(f"{op.label}: " + (
                f"the group is unusable after an earlier failure: {group._broken}"
                if group._broken else "the group was shut down (destroy_process_group)"))
        with self._lock:
            if self._stop:
                raise RuntimeError(f"{op.label}: the mpi4py process group engine has "
                                   "shut down (interpreter exit)")
            self._inflight[op.id] = op
            if self.mode == "sync":  # no thread: the caller is the only one in MPI
                op.inline = True
            elif waits and self._inline_ok and not self._busy and not self._queue:
                op.inline = self._busy = True
            else:
                op.latch = threading.Lock()
                op.latch.acquire()
                self._queue.append(op)
                self._cond.notify()
        if op.inline:
            self._run(op, blocking=True)
        return op

    def call(self, fn: Callable[[], Any], label: str, timeout_s: float) -> Any:
        """Run fn() where MPI calls run (communicator creation and freeing); wait for it."""
        op = self.submit(Op(None, label, timeout_s, task=fn), waits=True)
        if op.latch is not None and op.latch.acquire(timeout=timeout_s + 1.0):
            op.latch.release()
        if not op.done:
            raise CollectiveTimeout(f"{label}: not done after {timeout_s:.0f} s")
        if op.error is not None:
            raise op.error
        return op.result

    def wait(self, op: Op, timeout_s: float | None) -> bool:
        """Block until op is settled or `timeout_s` (None: forever) passes."""
        latch = op.latch
        if op.done or latch is None:  # an inline op is settled before its Work exists
            return op.done
        if latch.acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0.0)):
            latch.release()  # let any other waiter through
        return op.done

    # -- running one op (caller's thread or communication thread) --
    def _run(self, op: Op, blocking: bool):
        """Run a task, or start/run op's MPI call; completes op unless a Request is
        returned (nonblocking start)."""
        req = None
        try:
            if op.task is not None:
                op.result = op.task()
            else:
                group = op.group
                if group._broken:  # never start more MPI work on a communicator in trouble
                    raise RuntimeError(f"not started, the group is unusable: {group._broken}")
                assert op.call is not None  # an MPI op, not a task
                name, args = op.call
                # named for torch.profiler like Gloo's "gloo:all_reduce" (run --profile);
                # recorded where the profiler sees the thread: inline calls on the caller's
                # thread, not this engine's own communication thread
                with torch.profiler.record_function(f"mpi:{name.lower()}"):
                    if blocking:
                        getattr(group._comm, name)(*args)
                    else:
                        req = getattr(group._comm, "I" + name.lower())(*args)
        except Exception as exc:  # noqa: BLE001 - handed to the waiter
            self._complete(op, RuntimeError(f"{op.label}: {type(exc).__name__}: {exc}"))
            return None
        if req is None:
            self._complete(op)
        return req

    def _complete(self, op: Op, error: BaseException | None = None) -> None:
        """MPI is done with op's buffers: copy results back and settle it."""
        finish = op.finish if error is None else None
        with self._lock:
            expired = op.claimed  # the watchdog failed it already
            op.claimed = True
            self._inflight.pop(op.id, None)
            if op.inline and self.mode != "sync":
                self._busy = False
                if self._queue:
                    self._cond.notify()
            if not expired and finish is None:  # nothing to copy back: settle at once
                op.error, op.done, fut = error, True, op.future
        if expired:
            pass
        elif finish is None:
            if fut is not None:
                publish(fut, op)
            if op.latch is not None:
                op.latch.release()
        else:
            try:
                if op.stream is not None:
                    with torch.cuda.stream(op.stream):
                        finish()
                    op.stream.synchronize()
                else:
                    finish()
            except Exception as exc:  # noqa: BLE001
                error = RuntimeError(f"{op.label}: copying the result back failed: {exc}")
            self._settle(op, error)
        # Only now may the staging buffers go: MPI has stopped touching them.
        op.call = op.task = op.finish = op.stream = None
        op.keep = ()

    def _settle(self, op: Op, error: BaseException | None) -> None:
        with self._lock:
            op.error = error
            op.done = True
            fut = op.future
        if fut is not None:
            publish(fut, op)
        if op.latch is not None:
            op.latch.release()  # wakes wait()

    def future(self, op: Op) -> Future:
        """op's torch Future, created on first request (exactly one side publishes it)."""
        with self._lock:
            fut = op.future
            if fut is not None:
                return fut
            fut = op.future = Future()
            done = op.done
        if done:
            publish(fut, op)
        return fut

    # -- communication thread --
    def _next(self, block: bool) -> Op | None:
        """The next queued op, once MPI is free (None: stopping, or nothing queued)."""
        with self._cond:
            while block and (self._busy or not self._queue) and not self._stop:
                self._cond.wait()
            if not self._queue or self._busy:
                return None
            self._busy = True
            return self._queue.popleft()

    def _idle(self) -> None:
        with self._lock:
            self._busy = False
    def _loop_blocking(self) -> None:
        while (op := self._next(block=True)) is not None:
            self._run(op, blocking=True)
            op = None  # drop the op (and its buffers) at once
            self._idle()
        self._stopped.set()

    def _loop_nonblocking(self) -> None:
        active: deque = deque()
        while True:
            op = self._next(block=not active)
            if op is None and not active and self._stop:
                break
            while op is not None:  # start everything queued, in order
                req = self._run(op, blocking=False)
                if req is not None:
                    active.append((op, req))
                self._idle()
                op = self._next(block=False)
            req = None
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

    def expire(self, op: Op) -> bool:
        """Fail an unfinished op with CollectiveTimeout and mark its group unusable.
        An op running inline holds its caller inside MPI, where no error can reach it:
        the message is printed, and the caller raises it if MPI ever returns."""
        with self._lock:
            if op.claimed:
                return False
            op.claimed = True
            self._inflight.pop(op.id, None)
            self._expired += 1
        msg = (f"{op.label} timed out after {op.timeout_s:.1f} s: a rank died, is stuck, "
               "or the ranks issued different collectives in different order")
        if op.group is not None and not op.group._broken:
            op.group._broken = msg
        if os.environ.get(ABORT_ENV, "0") == "1":
            log.error(f"{msg}; aborting the job ({ABORT_ENV}=1)")
            mpi().COMM_WORLD.Abort(1)
        if op.inline:  # the caller may itself be stuck inside that MPI call
            log.error(f"{msg} (its caller is blocked inside MPI)")
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
                log.error("at exit the communication thread is still inside MPI (a "
                          "collective that timed out or was never matched); calling "
                          "MPI_Abort so that MPI_Finalize does not hang")
                mpi().COMM_WORLD.Abort(1)
        self._stopped.set()
        self._watchdog.join(timeout_s)

"""An MPI process group for torch.distributed, written in Python on mpi4py.

pip's torch wheels have no MPI backend (`torch.distributed.is_mpi_available()` is
False). This module fills the gap so that DDP can be measured over MPI too:

    from backends import mpi_pg
    name = mpi_pg.register()                    # "mpi4py"; safe to call twice
    dist.init_process_group(name, rank=r, world_size=n, store=store, timeout=t)
    model = torch.nn.parallel.DistributedDataParallel(model)

    mpirun -np 2 python train.py                # as root: OMPI_ALLOW_RUN_AS_ROOT=1
                                                # and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

The rank given to init_process_group may differ from the MPI rank: the group's
communicator is COMM_WORLD split with key=rank, so MPI rank == torch rank in it.
Each process group owns its communicator (subgroups: MPI_Comm_create_group over
the default group's communicator), so groups never see each other's messages.

Implemented: allreduce (SUM, AVG, MIN, MAX, PRODUCT; BAND/BOR/BXOR on integers),
allreduce_coalesced, broadcast, allgather (list form, uneven sizes allowed),
all_gather_single (all_gather_into_tensor / _allgather_base), reduce_scatter (list
form), reduce_scatter_single (reduce_scatter_tensor / _reduce_scatter_base) and
barrier. Everything else raises NotImplementedError naming the operation.
Reductions take float32, float64, int8, uint8, int16, int32, int64 as they are;
float16 and bfloat16 are reduced in float32 (a staging copy) and rounded back once:
the result is the float32 result rounded to the dtype, never an accumulation of
half-precision roundings. AVG on integers truncates toward zero (like NCCL).
Data movement (broadcast, allgather) takes any dtype.
Non-contiguous tensors go through a contiguous copy; CUDA tensors go through host
memory unless the MPI library says it is CUDA-aware.

How it is asynchronous: every MPI call of the process runs on ONE communication
thread (so MPI_THREAD_SERIALIZED suffices and Open MPI 4 is never entered from two
of our threads). A collective stages its buffers on the caller's thread, queues the
operation and returns a Work at once; the communication thread runs it, copies
results back, completes the Work's torch Future and wakes waiters. DDP therefore
overlaps gradient allreduce with the rest of backward. Two progress modes, chosen by
HVD_VS_DDP_MPI_PG_PROGRESS (or register(progress=...)):

- "thread" (default): blocking MPI collectives (MPI_Allreduce ...) on the
  communication thread, like torch's own ProcessGroupMPI. Open MPI 4 runs its tuned
  algorithms for these; its non-blocking ones (libnbc) were about 1.3-2x slower for
  a 64 MiB allreduce on the 2-core machine (tests/ranks/mpi_pg_bandwidth.py).
  Collectives of ALL groups then run one at a time in the order they were issued,
  so ranks must issue them in the same order across groups (as with torch's
  ProcessGroupMPI); "nonblocking" lifts that.
- "nonblocking": MPI_Iallreduce & co. started in order and progressed with
  MPI_Test by the communication thread, so collectives on different groups can be
  in flight at once.
- "sync": no thread; every collective finishes before the call returns (chosen
  automatically when MPI gives less than MPI_THREAD_SERIALIZED).

Timeouts: a watchdog thread fails every operation still unfinished after the group
timeout (or opts.timeout): its Future gets a CollectiveTimeout naming the operation,
dtype, size, group and rank (so DDP's backward raises instead of hanging), and the
group refuses new work. Work.wait() waits at most until that deadline;
Work.wait(timeout) raises CollectiveTimeout when its own timeout passes but leaves
the operation running. HVD_VS_DDP_MPI_PG_ABORT_ON_TIMEOUT=1 calls MPI_Abort on a
timeout instead, ending the whole job. Future.then() callbacks run on the
communication thread: they must not wait for other collectives.
"""
from __future__ import annotations

import atexit
import ctypes
import datetime
import importlib.util
import itertools
import os
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (AllgatherOptions, AllreduceCoalescedOptions,
                                        AllreduceOptions, BarrierOptions, BroadcastOptions,
                                        ReduceScatterOptions)
from torch.futures import Future

__all__ = ["register", "is_available", "describe", "MPIProcessGroup", "MPIWork",
           "CollectiveTimeout", "PROGRESS_MODES"]

PROGRESS_MODES = ("thread", "nonblocking", "sync")
_PROGRESS_ENV = "HVD_VS_DDP_MPI_PG_PROGRESS"
_ABORT_ENV = "HVD_VS_DDP_MPI_PG_ABORT_ON_TIMEOUT"
_CUDA_AWARE_ENV = "HVD_VS_DDP_MPI_CUDA_AWARE"  # "0"/"1" overrides the query
_INT_MAX = 2**31 - 1
_RED_OPS = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"}
_NATIVE = ("float32", "float64", "int8", "uint8", "int16", "int32", "int64")
_VIA_FLOAT32 = (torch.float16, torch.bfloat16)
_IMPLEMENTED = ("allreduce, allreduce_coalesced, broadcast, allgather, all_gather_single, "
                "reduce_scatter, reduce_scatter_single, barrier")


class CollectiveTimeout(RuntimeError):
    """A collective did not finish within its timeout."""


def _mpi():
    from mpi4py import MPI  # initialises MPI (thread level: mpi4py.rc, default multiple)
    return MPI


# ---------------------------------------------------------------- type mapping

def _red_dtype(dtype: torch.dtype, opname: str, op_name: str) -> tuple[torch.dtype, Any]:
    """(dtype the reduction runs in, its MPI datatype) or a clear error."""
    MPI = _mpi()
    table = {torch.float32: MPI.FLOAT, torch.float64: MPI.DOUBLE, torch.int8: MPI.INT8_T,
             torch.uint8: MPI.UINT8_T, torch.int16: MPI.INT16_T, torch.int32: MPI.INT32_T,
             torch.int64: MPI.INT64_T}
    work = torch.float32 if dtype in _VIA_FLOAT32 else dtype
    if work not in table:
        raise TypeError(f"mpi4py process group: {opname} with ReduceOp.{op_name} does not "
                        f"support dtype {dtype}; reductions take {', '.join(_NATIVE)}, "
                        "float16 and bfloat16")
    if op_name in ("BAND", "BOR", "BXOR") and work.is_floating_point:
        raise TypeError(f"mpi4py process group: {opname} with ReduceOp.{op_name} does not "
                        f"support dtype {dtype}; bitwise reductions need an integer dtype")
    return work, table[work]


def _red_op(op: Any, opname: str, dtype: torch.dtype) -> tuple[str, Any]:
    """(name, MPI.Op) for a torch ReduceOp; AVG is SUM followed by a division."""
    kind = getattr(op, "op", op)  # ReduceOp -> RedOpType
    name = getattr(kind, "name", str(kind))
    if name not in _RED_OPS:
        raise ValueError(f"mpi4py process group: {opname} does not support ReduceOp.{name} "
                         f"(dtype {dtype}); supported: SUM, AVG, PRODUCT, MIN, MAX and, on "
                         "integers, BAND, BOR, BXOR")
    MPI = _mpi()
    mpi_op = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN,
              "MAX": MPI.MAX, "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[name]
    return name, mpi_op


_MOVE_TYPES: dict[int, Any] = {}


def _move_type(itemsize: int):
    """An MPI datatype of `itemsize` bytes, for operations that only move data."""
    if itemsize not in _MOVE_TYPES:
        MPI = _mpi()
        base = {1: MPI.BYTE, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}
        if itemsize in base:
            _MOVE_TYPES[itemsize] = base[itemsize]
        else:
            _MOVE_TYPES[itemsize] = MPI.BYTE.Create_contiguous(itemsize).Commit()
    return _MOVE_TYPES[itemsize]


def _check(t: Any, opname: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"mpi4py process group: {opname} expects tensors, got {type(t)}")
    if t.layout != torch.strided:
        raise TypeError(f"mpi4py process group: {opname} does not support {t.layout} "
                        f"tensors (dtype {t.dtype}); only dense (strided) tensors")
    if t.device.type not in ("cpu", "cuda"):
        raise TypeError(f"mpi4py process group: {opname} does not support device "
                        f"{t.device} (dtype {t.dtype}); only cpu and cuda")
    if t.numel() > _INT_MAX:
        raise ValueError(f"mpi4py process group: {opname} of {t.numel()} elements "
                         f"({t.dtype}) exceeds MPI's count limit of 2**31-1")
    return t


def _msg(t: torch.Tensor, mpi_type) -> list:
    """An mpi4py message [buffer, datatype] over a contiguous tensor's memory."""
    MPI = _mpi()
    return [MPI.buffer.fromaddress(t.data_ptr(), t.numel() * t.element_size()), mpi_type]


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1 = a0 + a.numel() * a.element_size()
    b1 = b0 + b.numel() * b.element_size()
    return a0 < b1 and b0 < a1


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


# ----------------------------------------------------------- process group

class _Staged:
    """A contiguous buffer in the working dtype/device, copied back on finish."""

    def __init__(self, t: torch.Tensor, dtype: torch.dtype, on_device: bool,
                 copy_in: bool = True, force: bool = False):
        self.orig = t
        device = t.device if on_device else torch.device("cpu")
        self.copy = force or t.dtype != dtype or t.device != device or not t.is_contiguous()
        if self.copy:
            self.buf = torch.empty(t.shape, dtype=dtype, device=device)
            if copy_in:
                self.buf.copy_(t.detach())
        else:
            self.buf = t.detach()

    def back(self) -> None:
        if self.copy:
            self.orig.detach().copy_(self.buf)


class MPIProcessGroup(dist.ProcessGroup):
    """torch.distributed process group whose collectives run on an MPI communicator."""

    def __init__(self, comm, rank: int, size: int, timeout: datetime.timedelta):
        super().__init__(rank, size)
        self._comm = comm
        self._rank, self._size = rank, size
        self._timeout_s = timeout.total_seconds()
        self._cuda_aware = _cuda_aware()[0]
        self._seq = itertools.count()
        self._broken: str | None = None
        self._closed = False
        self._group_name = self._group_desc = ""
        self._engine = _engine()

    # -- identity (torch's C++ side calls these through its Python trampoline) --
    def getBackendName(self) -> str:
        return "mpi4py"

    def setGroupName(self, name: str) -> None:
        self._group_name = name

    def getGroupName(self) -> str:
        return self._group_name

    def setGroupDesc(self, desc: str) -> None:
        self._group_desc = desc

    def getGroupDesc(self) -> str:
        return self._group_desc

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    def __repr__(self) -> str:
        return f"MPIProcessGroup(rank={self._rank}, size={self._size}, mode={self._engine.mode})"

    # -- plumbing --
    def _label(self, opname: str, t: torch.Tensor | None, red: str | None = None) -> str:
        gname = self._group_name or "?"
        what = "" if t is None else f" ({t.dtype}, {t.numel()} elements"
        what += "" if t is None else (f", ReduceOp.{red})" if red else ")")
        return (f"mpi4py process group '{gname}' rank {self._rank}/{self._size}: "
                f"{opname} #{next(self._seq)}{what}")

    def _timeout(self, opts) -> float:
        t = getattr(opts, "timeout", None)
        if isinstance(t, datetime.timedelta) and t.total_seconds() > 0:
            return t.total_seconds()
        return self._timeout_s

    def _on_device(self, t: torch.Tensor) -> bool:
        return t.device.type == "cpu" or self._cuda_aware

    def _launch(self, opname, t, red, opts, call, finish, result, keep) -> MPIWork:
        stream = None
        if any(x.is_cuda for x in keep if isinstance(x, torch.Tensor)):
            stream = torch.cuda.current_stream(t.device)
            stream.synchronize()  # staged/device buffers must be ready before MPI reads
        op = _Op(self._label(opname, t, red), self, self._timeout(opts), call=call,
                 finish=finish, result=result, keep=keep, stream=stream)
        return MPIWork(self._engine.submit(op))

    @staticmethod
    def _one(tensors, opname: str) -> torch.Tensor:
        if len(tensors) != 1:
            raise ValueError(f"mpi4py process group: {opname} takes exactly one tensor per "
                             f"call, got {len(tensors)}")
        return _check(tensors[0], opname)

    def _post_avg(self, name: str, buf: torch.Tensor) -> None:
        if name == "AVG":
            if buf.is_floating_point():
                buf.div_(self._size)
            else:
                buf.copy_(torch.div(buf, self._size, rounding_mode="trunc"))

    @staticmethod
    def _same(ts, ref: torch.Tensor, opname: str) -> None:
        for x in ts:
            _check(x, opname)
            if x.dtype != ref.dtype or x.device != ref.device:
                raise TypeError(f"mpi4py process group: {opname} needs every tensor to be "
                                f"{ref.dtype} on {ref.device}; got {x.dtype} on {x.device}")

    # -- collectives --
    def allreduce(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllreduceOptions()
        t = self._one(tensors, "allreduce")
        name, mpi_op = _red_op(opts.reduceOp, "allreduce", t.dtype)
        work, mtype = _red_dtype(t.dtype, "allreduce", name)
        st = _Staged(t, work, self._on_device(t))
        MPI = _mpi()

        def finish():
            self._post_avg(name, st.buf)
            st.back()
        return self._launch("allreduce", t, name, opts,
                            ("Allreduce", (MPI.IN_PLACE, _msg(st.buf, mtype), mpi_op)),
                            finish, [t], (st.buf, t))

    def allreduce_coalesced(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllreduceCoalescedOptions()
        if not tensors:
            raise ValueError("mpi4py process group: allreduce_coalesced got no tensors")
        t = _check(tensors[0], "allreduce_coalesced")
        self._same(tensors, t, "allreduce_coalesced")
        name, mpi_op = _red_op(opts.reduceOp, "allreduce_coalesced", t.dtype)
        work, mtype = _red_dtype(t.dtype, "allreduce_coalesced", name)
        dev = t.device if self._on_device(t) else torch.device("cpu")
        flat = torch.cat([x.detach().reshape(-1).to(dev, work) for x in tensors])
        MPI = _mpi()

        def finish():
            self._post_avg(name, flat)
            for x, part in zip(tensors, flat.split([x.numel() for x in tensors]), strict=True):
                x.detach().copy_(part.view(x.shape))
        return self._launch("allreduce_coalesced", t, name, opts,
                            ("Allreduce", (MPI.IN_PLACE, _msg(flat, mtype), mpi_op)),
                            finish, list(tensors), (flat, *tensors))

    def broadcast(self, tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else BroadcastOptions()
        t = self._one(tensors, "broadcast")
        if opts.rootTensor != 0:
            raise ValueError("mpi4py process group: broadcast supports rootTensor=0 only")
        root = opts.rootRank
        st = _Staged(t, t.dtype, self._on_device(t), copy_in=(root == self._rank))
        return self._launch("broadcast", t, None, opts,
                            ("Bcast", (_msg(st.buf, _move_type(t.element_size())), root)),
                            st.back, [t], (st.buf, t))

    def allgather(self, output_tensors, input_tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllgatherOptions()
        t = self._one(input_tensors, "allgather")
        if len(output_tensors) != 1 or len(output_tensors[0]) != self._size:
            raise ValueError(f"mpi4py process group: allgather needs one output list of "
                             f"{self._size} tensors")
        outs = output_tensors[0]
        self._same(outs, t, "allgather")
        if outs[self._rank].numel() != t.numel():
            raise ValueError(f"mpi4py process group: allgather output[{self._rank}] has "
                             f"{outs[self._rank].numel()} elements, input has {t.numel()}")
        on_dev = self._on_device(t)
        src = _Staged(t, t.dtype, on_dev)
        counts = [o.numel() for o in outs]
        recv = torch.empty(sum(counts), dtype=t.dtype,
                           device=t.device if on_dev else torch.device("cpu"))
        mtype = _move_type(t.element_size())
        if len(set(counts)) == 1:
            call = ("Allgather", (_msg(src.buf, mtype), _msg(recv, mtype)))
        else:
            displs = list(itertools.accumulate([0] + counts[:-1]))
            rmsg = _msg(recv, mtype)
            call = ("Allgatherv", (_msg(src.buf, mtype), [rmsg[0], (counts, displs), mtype]))

        def finish():
            for o, part in zip(outs, recv.split(counts), strict=True):
                o.detach().copy_(part.view(o.shape))
        return self._launch("allgather", t, None, opts, call, finish, [list(outs)],
                            (src.buf, recv, t, *outs))

    def all_gather_single(self, output, input, opts=None) -> MPIWork:
        opts = opts if opts is not None else AllgatherOptions()
        _check(input, "all_gather_single")
        self._same([output], input, "all_gather_single")
        n = input.numel()
        if output.numel() != n * self._size:
            raise ValueError(f"mpi4py process group: all_gather_single output has "
                             f"{output.numel()} elements, expected {self._size} x {n}")
        on_dev = self._on_device(input)
        out = _Staged(output, output.dtype, on_dev, copy_in=False)
        mtype = _move_type(input.element_size())
        MPI = _mpi()
        slot = out.buf.reshape(-1)[self._rank * n:(self._rank + 1) * n]
        if not out.copy and input.is_contiguous() and input.data_ptr() == slot.data_ptr() \
                and n > 0:
            send = MPI.IN_PLACE  # input is this rank's slot of the output (FSDP-style)
            keep = (out.buf, input, output)
        else:
            src = _Staged(input, input.dtype, on_dev, force=_overlaps(input, output))
            send, keep = _msg(src.buf, mtype), (src.buf, out.buf, input, output)
        return self._launch("all_gather_single", input, None, opts,
                            ("Allgather", (send, _msg(out.buf, mtype))),
                            out.back, [output], keep)

    _allgather_base = all_gather_single

    def reduce_scatter(self, output_tensors, input_tensors, opts=None) -> MPIWork:
        opts = opts if opts is not None else ReduceScatterOptions()
        t = self._one(output_tensors, "reduce_scatter")
        if len(input_tensors) != 1 or len(input_tensors[0]) != self._size:
            raise ValueError(f"mpi4py process group: reduce_scatter needs one input list of "
                             f"{self._size} tensors")
        ins = input_tensors[0]
        self._same(ins, t, "reduce_scatter")
        counts = [x.numel() for x in ins]
        if counts[self._rank] != t.numel():
            raise ValueError(f"mpi4py process group: reduce_scatter input[{self._rank}] has "
                             f"{counts[self._rank]} elements, output has {t.numel()}")
        name, mpi_op = _red_op(opts.reduceOp, "reduce_scatter", t.dtype)
        work, mtype = _red_dtype(t.dtype, "reduce_scatter", name)
        dev = t.device if self._on_device(t) else torch.device("cpu")
        send = torch.cat([x.detach().reshape(-1).to(dev, work) for x in ins])
        out = _Staged(t, work, self._on_device(t), copy_in=False)

        def finish():
            self._post_avg(name, out.buf)
            out.back()
        return self._launch("reduce_scatter", t, name, opts,
                            ("Reduce_scatter", (_msg(send, mtype), _msg(out.buf, mtype),
                                                counts, mpi_op)),
                            finish, [t], (send, out.buf, t))

    def reduce_scatter_single(self, output, input, opts=None) -> MPIWork:
        opts = opts if opts is not None else ReduceScatterOptions()
        _check(output, "reduce_scatter_single")
        self._same([input], output, "reduce_scatter_single")
        if input.numel() != output.numel() * self._size:
            raise ValueError(f"mpi4py process group: reduce_scatter_single input has "
                             f"{input.numel()} elements, expected {self._size} x "
                             f"{output.numel()}")
        name, mpi_op = _red_op(opts.reduceOp, "reduce_scatter_single", output.dtype)
        work, mtype = _red_dtype(output.dtype, "reduce_scatter_single", name)
        on_dev = self._on_device(output)
        src = _Staged(input, work, on_dev, force=_overlaps(input, output))
        out = _Staged(output, work, on_dev, copy_in=False)

        def finish():
            self._post_avg(name, out.buf)
            out.back()
        return self._launch("reduce_scatter_single", output, name, opts,
                            ("Reduce_scatter_block", (_msg(src.buf, mtype),
                                                      _msg(out.buf, mtype), mpi_op)),
                            finish, [output], (src.buf, out.buf, input, output))

    _reduce_scatter_base = reduce_scatter_single

    def barrier(self, opts=None) -> MPIWork:
        opts = opts if opts is not None else BarrierOptions()
        op = _Op(self._label("barrier", None), self, self._timeout(opts),
                 call=("Barrier", ()), result=[])
        return MPIWork(self._engine.submit(op))

    # -- lifecycle --
    def shutdown(self) -> None:
        """Free the communicator once this group's queued work has run (bounded wait).
        New collectives on the group are refused from now on."""
        global _DEFAULT_COMM
        if self._comm is None or self._closed:
            return
        self._closed = True
        if self._comm is _DEFAULT_COMM:
            _DEFAULT_COMM = None
        if self._broken:  # something may still be inside MPI on it: leave it to Finalize
            return

        def free():  # queued behind this group's earlier collectives
            comm, self._comm = self._comm, None
            comm.Free()
        if self._engine.mode == "sync":
            free()
            return
        try:
            self._engine.call(free, f"free communicator of {self!r}", self._timeout_s)
        except RuntimeError as exc:  # e.g. the engine stopped at exit: Finalize frees it
            print(f"[mpi4py-pg] shutdown of {self!r}: {exc}", file=sys.stderr, flush=True)

    def abort(self) -> None:
        self._broken = self._broken or "aborted by the user"


def _unsupported(opname: str):
    def method(self, *args, **kwargs):
        flat = list(args)
        while any(isinstance(a, (list, tuple)) for a in flat):
            flat = [b for a in flat for b in (a if isinstance(a, (list, tuple)) else [a])]
        dtypes = sorted({str(a.dtype) for a in flat if isinstance(a, torch.Tensor)})
        what = f" (dtype {', '.join(dtypes)})" if dtypes else ""
        raise NotImplementedError(
            f"mpi4py process group: {opname}{what} is not implemented; implemented: "
            f"{_IMPLEMENTED}. Use the gloo backend for {opname}.")
    method.__name__ = opname
    return method


for _name in ("reduce", "gather", "gather_single", "scatter", "alltoall", "alltoall_base",
              "all_to_all_single", "send", "recv", "recv_anysource", "allgather_coalesced",
              "all_gather_single_coalesced", "allgather_into_tensor_coalesced",
              "reduce_scatter_single_coalesced", "reduce_scatter_tensor_coalesced",
              "allreduce_sparse", "monitored_barrier", "start_coalescing", "end_coalescing"):
    setattr(MPIProcessGroup, _name, _unsupported(_name))


# ------------------------------------------------------------- creation

_DEFAULT_COMM = None  # communicator of the default group (torch rank == MPI rank)


def _create(opts, backend_options=None) -> MPIProcessGroup:
    """The creator torch calls (extended API) for the default group and subgroups."""
    global _DEFAULT_COMM
    MPI = _mpi()
    rank, size = opts.group_rank, opts.group_size
    timeout = opts.timeout
    ranks = list(opts.global_ranks_in_group)
    eng = _engine()
    label = f"mpi4py process group: creating a communicator for ranks {ranks or 'all'}"

    def make():
        world = MPI.COMM_WORLD
        if not ranks:  # the default group: every MPI process, ordered by torch rank
            if size != world.Get_size():
                raise RuntimeError(
                    f"mpi4py process group: world_size={size} but MPI has "
                    f"{world.Get_size()} processes; launch exactly world_size ranks with "
                    "mpirun")
            return world.Split(0, rank)
        parent = _DEFAULT_COMM
        if parent is None:  # default group has another backend: assume torch == MPI ranks
            parent = world
            if dist.get_world_size() != world.Get_size():
                raise RuntimeError("mpi4py process group: a subgroup needs the default "
                                   "group's ranks to be the MPI ranks")
        return parent.Create_group(parent.Get_group().Incl(ranks))

    comm = make() if eng.mode == "sync" else eng.call(make, label, timeout.total_seconds())
    if comm.Get_rank() != rank or comm.Get_size() != size:
        raise RuntimeError(f"mpi4py process group: communicator has rank {comm.Get_rank()}"
                           f"/{comm.Get_size()}, torch expects {rank}/{size}: duplicate "
                           "or inconsistent ranks given to init_process_group?")
    if not ranks:
        _DEFAULT_COMM = comm
    return MPIProcessGroup(comm, rank, size, timeout)


def register(name: str = "mpi4py", progress: str | None = None) -> str:
    """Register the backend with torch.distributed (idempotent); returns its name.

    progress: "thread" | "nonblocking" | "sync"; default from the environment
    variable HVD_VS_DDP_MPI_PG_PROGRESS, else "thread". Fixed once a group exists.
    """
    global _MODE
    if progress is not None:
        if progress not in PROGRESS_MODES:
            raise ValueError(f"progress={progress!r}: expected one of {PROGRESS_MODES}")
        if _ENGINE is not None and _ENGINE.mode != progress:
            raise RuntimeError(f"mpi4py process group already runs in {_ENGINE.mode!r} mode")
        _MODE = progress
    if name.upper() not in getattr(dist.Backend, "_plugins", {}):
        dist.Backend.register_backend(name, _create, extended_api=True,
                                      devices=["cpu", "cuda"])
    return name.lower()


def is_available() -> tuple[bool, str]:
    """Can this process use the backend? Does not initialise MPI."""
    if importlib.util.find_spec("mpi4py") is None:
        return False, "mpi4py is not installed (pip install mpi4py; needs an MPI library)"
    if not hasattr(dist, "ProcessGroup") or not hasattr(dist.Backend, "register_backend"):
        return False, "this torch cannot register Python process groups"
    if "mpi4py.MPI" in sys.modules:
        MPI = sys.modules["mpi4py.MPI"]
        if MPI.Is_initialized() and MPI.Query_thread() < MPI.THREAD_SERIALIZED:
            return True, "mpi4py process group (synchronous: MPI thread level too low)"
    return True, "mpi4py process group"


# ----------------------------------------------------------- description

_CUDA_AWARE: tuple[bool, str] | None = None


def _cuda_aware() -> tuple[bool, str]:
    """(is the MPI CUDA-aware, how we know)."""
    global _CUDA_AWARE
    if _CUDA_AWARE is not None:
        return _CUDA_AWARE
    env = os.environ.get(_CUDA_AWARE_ENV)
    if env in ("0", "1"):
        _CUDA_AWARE = (env == "1", f"{_CUDA_AWARE_ENV}={env}")
        return _CUDA_AWARE
    _mpi()
    try:  # Open MPI's runtime query, from the libmpi this process loaded
        with open("/proc/self/maps") as maps:
            paths = {ln.split()[-1] for ln in maps if "libmpi.so" in ln}
        for path in sorted(paths):
            fn = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
            if fn is not None:
                fn.restype = ctypes.c_int
                _CUDA_AWARE = (bool(fn()), "MPIX_Query_cuda_support()")
                return _CUDA_AWARE
    except OSError:
        pass
    try:
        out = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True,
                             text=True, timeout=30).stdout
        for line in out.splitlines():
            if "built_with_cuda_support:value:" in line:
                _CUDA_AWARE = (line.endswith("true"), "ompi_info")
                return _CUDA_AWARE
    except (OSError, subprocess.SubprocessError):
        pass
    _CUDA_AWARE = (False, "unknown: no query available, assuming host staging")
    return _CUDA_AWARE


def describe() -> dict:
    """Metadata for reports: implementation, MPI library, CUDA-awareness, async mode."""
    import mpi4py
    MPI = _mpi()
    levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
              MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    aware, source = _cuda_aware()
    mode = _ENGINE.mode if _ENGINE is not None else _progress_mode()
    if mode != "sync" and MPI.Query_thread() < MPI.THREAD_SERIALIZED:
        mode = "sync"
    return {
        "implementation": "mpi4py",
        "mpi4py_version": mpi4py.__version__,
        "mpi_library_version": MPI.Get_library_version().strip("\x00 \n"),
        "mpi_vendor": "%s %s" % (MPI.get_vendor()[0], ".".join(map(str, MPI.get_vendor()[1]))),
        "mpi_standard": "%d.%d" % MPI.Get_version(),
        "mpi_thread_level": levels.get(MPI.Query_thread(), str(MPI.Query_thread())),
        "cuda_aware": aware,
        "cuda_aware_source": source,
        "async_mode": mode,
        "async_detail": {
            "thread": "blocking MPI collectives on one communication thread",
            "nonblocking": "MPI_I* collectives progressed by one communication thread",
            "sync": "no overlap: each collective completes before returning",
        }[mode],
        "half_precision_reduction": "float32 staging",
    }

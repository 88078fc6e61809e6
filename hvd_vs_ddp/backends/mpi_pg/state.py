"""The package's process-wide state, in one object: STATE.

It holds what must be one per process: the progress mode asked for, the _Engine
(created on first use, in that mode), the default group's communicator (parent of
subgroups) and the CUDA-awareness answer. Other modules change it only through its
methods; no module assigns another module's globals.
"""
from __future__ import annotations

import os
import threading

from .common import DEFAULT_PROGRESS, PROGRESS_ENV, PROGRESS_MODES, mpi
from .engine import _Engine
from .probe import query_cuda_aware


class _State:
    """Mode, engine, default communicator and CUDA-awareness of this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mode: str | None = None  # register(progress=...); else the environment
        self._engine: _Engine | None = None
        self._default_comm = None
        self._cuda_aware: tuple[bool, str] | None = None

    # -- progress mode and engine --
    def request_mode(self, progress: str) -> None:
        """Ask for a progress mode; refused once the engine runs in another one."""
        if progress not in PROGRESS_MODES:
            raise ValueError(f"progress={progress!r}: expected one of {PROGRESS_MODES}")
        with self._lock:
            if self._engine is not None and self._engine.mode != progress:
                raise RuntimeError("mpi4py process group already runs in "
                                   f"{self._engine.mode!r} mode")
            self._mode = progress

    def progress_mode(self) -> str:
        """The mode asked for: register(progress=...), else $HVD_VS_DDP_MPI_PG_PROGRESS,
        else the default."""
        mode = self._mode or os.environ.get(PROGRESS_ENV, DEFAULT_PROGRESS)
        if mode not in PROGRESS_MODES:
            raise ValueError(f"{PROGRESS_ENV}={mode!r}: expected one of {PROGRESS_MODES}")
        return mode

    def effective_mode(self) -> str:
        """The mode collectives run in (or will): "sync" when MPI's thread level is
        below MPI_THREAD_SERIALIZED."""
        if self._engine is not None:
            return self._engine.mode
        mode = self.progress_mode()
        MPI = mpi()
        return "sync" if MPI.Query_thread() < MPI.THREAD_SERIALIZED else mode

    def engine(self) -> _Engine:
        """The process's engine, created on first use."""
        with self._lock:
            if self._engine is None:
                self._engine = _Engine(self.progress_mode())
            return self._engine

    # -- the default group's communicator --
    @property
    def default_comm(self):
        """Communicator of the default group (torch rank == its rank), or None."""
        return self._default_comm

    def set_default_comm(self, comm) -> None:
        self._default_comm = comm

    def forget_default_comm(self, comm) -> None:
        """The default group shut down: subgroups fall back to COMM_WORLD."""
        if self._default_comm is comm:
            self._default_comm = None

    # -- CUDA-awareness --
    def cuda_aware(self) -> tuple[bool, str]:
        """(is the MPI CUDA-aware, how we know), asked once per process."""
        if self._cuda_aware is None:
            self._cuda_aware = query_cuda_aware()
        return self._cuda_aware


STATE = _State()

"""Description of the mpi4py process group for reports: describe(), _cuda_aware().

Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

import ctypes
import os
import subprocess

from . import engine as _eng
from .common import _CUDA_AWARE_ENV, _mpi
from .engine import _progress_mode

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
    mode = _eng._ENGINE.mode if _eng._ENGINE is not None else _progress_mode()
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

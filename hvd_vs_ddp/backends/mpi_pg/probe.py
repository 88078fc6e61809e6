"""Is the loaded MPI library CUDA-aware? One query, asked of the library itself.

Order: the HVD_VS_DDP_MPI_CUDA_AWARE override ("0"/"1"), Open MPI's runtime
MPIX_Query_cuda_support() from the libmpi this process loaded, `ompi_info`, else
"no" (host staging, always correct). state.STATE caches the answer per process.
"""
from __future__ import annotations

import ctypes
import os
import subprocess

from .common import CUDA_AWARE_ENV, mpi


def query_cuda_aware() -> tuple[bool, str]:
    """(is the MPI CUDA-aware, how we know)."""
    env = os.environ.get(CUDA_AWARE_ENV)
    if env in ("0", "1"):
        return env == "1", f"{CUDA_AWARE_ENV}={env}"
    mpi()
    try:  # Open MPI's runtime query, from the libmpi this process loaded
        with open("/proc/self/maps") as maps:
            paths = {ln.split()[-1] for ln in maps if "libmpi.so" in ln}
        for path in sorted(paths):
            fn = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return bool(fn()), "MPIX_Query_cuda_support()"
    except OSError:
        pass
    try:
        out = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True,
                             text=True, timeout=30, check=False).stdout
        for line in out.splitlines():
            if "built_with_cuda_support:value:" in line:
                return line.endswith("true"), "ompi_info"
    except (OSError, subprocess.SubprocessError):
        pass
    return False, "unknown: no query available, assuming host staging"

"""describe(): what the mpi4py process group runs on, for the results' metadata.

Implementation and versions, the MPI library and its thread level, CUDA-awareness
(and how it was found out), the progress mode and what it means.
"""
from __future__ import annotations

from .common import mpi
from .state import STATE

_MODES = {
    "inline": "blocking MPI collectives, on the caller when it waits at once, else on "
              "one communication thread",
    "thread": "blocking MPI collectives on one communication thread",
    "nonblocking": "MPI_I* collectives progressed by one communication thread",
    "sync": "no overlap: each collective completes before returning",
}


def describe() -> dict:
    """Metadata for reports: implementation, MPI library, CUDA-awareness, async mode."""
    import mpi4py
    MPI = mpi()
    levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
              MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    aware, source = STATE.cuda_aware()
    mode = STATE.effective_mode()
    vendor, version = MPI.get_vendor()
    return {
        "implementation": "mpi4py",
        "mpi4py_version": mpi4py.__version__,
        "mpi_library_version": MPI.Get_library_version().strip("\x00 \n"),
        "mpi_vendor": f"{vendor} {'.'.join(map(str, version))}",
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "mpi_thread_level": levels.get(MPI.Query_thread(), str(MPI.Query_thread())),
        "cuda_aware": aware,
        "cuda_aware_source": source,
        "async_mode": mode,
        "async_detail": _MODES[mode],
        "half_precision_reduction": "float32 staging",
    }

"""Creation of mpi4py process groups: register() with torch.distributed, is_available().

_create is the creator torch calls for the default group and subgroups. Module
globals of engine.py and group.py (_MODE, _ENGINE, _DEFAULT_COMM) are read and set
through those modules.
Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

import importlib.util
import sys

import torch.distributed as dist

from . import engine as _eng
from . import group as _group
from .common import PROGRESS_MODES, _mpi
from .engine import _engine
from .group import MPIProcessGroup

# ------------------------------------------------------------- creation


def _create(opts, backend_options=None) -> MPIProcessGroup:
    """The creator torch calls (extended API) for the default group and subgroups."""
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
        parent = _group._DEFAULT_COMM
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
        _group._DEFAULT_COMM = comm
    return MPIProcessGroup(comm, rank, size, timeout)


def register(name: str = "mpi4py", progress: str | None = None) -> str:
    """Register the backend with torch.distributed (idempotent); returns its name.

    progress: "thread" | "nonblocking" | "sync"; default from the environment
    variable HVD_VS_DDP_MPI_PG_PROGRESS, else "thread". Fixed once a group exists.
    """
    if progress is not None:
        if progress not in PROGRESS_MODES:
            raise ValueError(f"progress={progress!r}: expected one of {PROGRESS_MODES}")
        if _eng._ENGINE is not None and _eng._ENGINE.mode != progress:
            raise RuntimeError(f"mpi4py process group already runs in {_eng._ENGINE.mode!r} mode")
        _eng._MODE = progress
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

"""Making process groups: register() with torch.distributed, its creator, is_available().

The default group's communicator is COMM_WORLD split with key = torch rank, so that
MPI rank == torch rank in it; a subgroup's is MPI_Comm_create_group over the default
group's communicator (STATE.default_comm). Communicators are made where MPI calls
run (engine.call), in order with the collectives already issued.
"""
from __future__ import annotations

import importlib.util
import sys

import torch.distributed as dist

from hvd_vs_ddp.common.availability import Availability

from .common import mpi
from .group import MPIProcessGroup
from .state import STATE


def _create(opts, backend_options=None) -> MPIProcessGroup:
    """The creator torch calls (extended API) for the default group and subgroups."""
    MPI = mpi()
    rank, size = opts.group_rank, opts.group_size
    timeout = opts.timeout
    ranks = list(opts.global_ranks_in_group)
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
        parent = STATE.default_comm
        if parent is None:  # default group has another backend: assume torch == MPI ranks
            parent = world
            if dist.get_world_size() != world.Get_size():
                raise RuntimeError("mpi4py process group: a subgroup needs the default "
                                   "group's ranks to be the MPI ranks")
        return parent.Create_group(parent.Get_group().Incl(ranks))

    comm = STATE.engine().call(make, label, timeout.total_seconds())
    if comm.Get_rank() != rank or comm.Get_size() != size:
        raise RuntimeError(f"mpi4py process group: communicator has rank {comm.Get_rank()}"
                           f"/{comm.Get_size()}, torch expects {rank}/{size}: duplicate "
                           "or inconsistent ranks given to init_process_group?")
    if not ranks:
        STATE.set_default_comm(comm)
    return MPIProcessGroup(comm, rank, size, timeout)


def register(name: str = "mpi4py", progress: str | None = None) -> str:
    """Register the backend with torch.distributed (idempotent); returns its name.

    progress: one of PROGRESS_MODES ("inline", "thread", "nonblocking", "sync");
    default from the environment variable HVD_VS_DDP_MPI_PG_PROGRESS, else "inline".
    Fixed once a group exists.
    """
    if progress is not None:
        STATE.request_mode(progress)
    if name.upper() not in getattr(dist.Backend, "_plugins", {}):
        dist.Backend.register_backend(name, _create, extended_api=True,
                                      devices=["cpu", "cuda"])
    return name.lower()


def is_available() -> Availability:
    """Can this process use the backend? Does not initialise MPI."""
    if importlib.util.find_spec("mpi4py") is None:
        return Availability(False, "mpi4py is not installed (pip install mpi4py; needs an "
                                   "MPI library)")
    if not hasattr(dist, "ProcessGroup") or not hasattr(dist.Backend, "register_backend"):
        return Availability(False, "this torch cannot register Python process groups")
    if "mpi4py.MPI" in sys.modules:
        MPI = sys.modules["mpi4py.MPI"]
        if MPI.Is_initialized() and MPI.Query_thread() < MPI.THREAD_SERIALIZED:
            return Availability(True, "mpi4py process group (synchronous: MPI thread level "
                                      "too low)")
    return Availability(True, "mpi4py process group")

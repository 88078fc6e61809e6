"""Allreduce bandwidth: the mpi4py process group against raw mpi4py on the same buffer.

Not a test (no pass/fail on timings): it prints median time, algbw and busbw
(nccl-tests: busbw = algbw * 2(n-1)/n) of a float32 SUM allreduce for
  raw  comm.Allreduce(IN_PLACE, buf)          (blocking, Open MPI's tuned algorithm)
  raw  comm.Iallreduce(IN_PLACE, buf).Wait()  (non-blocking, libnbc)
  pg   dist.all_reduce(tensor) over "mpi4py"  (this repo's hvd_vs_ddp/backends/mpi_pg/)
and the ratio pg / raw Allreduce (time), checking the result of every round.

Run (from the repo root; as root also export OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    mpirun -np 2 python tests/ranks/mpi_pg_bandwidth.py [--mib 64] [--rounds 10]
    HVD_VS_DDP_MPI_PG_PROGRESS=nonblocking mpirun -np 2 python tests/ranks/mpi_pg_bandwidth.py
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import time

import torch
import torch.distributed as dist
from mpi4py import MPI

from hvd_vs_ddp.backends import mpi_pg
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.rendezvous import store_for


def _init(world) -> None:
    rank, size = world.Get_rank(), world.Get_size()
    # the project's own rendezvous: rank 0 opens a store, MPI shares its address
    store = store_for(detect(), datetime.timedelta(seconds=120))
    dist.init_process_group(mpi_pg.register(), rank=rank, world_size=size, store=store,
                            timeout=datetime.timedelta(seconds=120))


def _time(world, variants: dict, check, rounds: int, warmup: int = 2) -> dict:
    """Median seconds per variant (slowest rank of each round), variants interleaved
    round by round so that load from other jobs hits all of them alike; every
    round's result is checked on every rank."""
    times: dict = {name: [] for name in variants}
    for i in range(warmup + rounds):
        for name, fn in variants.items():
            world.Barrier()
            t0 = time.perf_counter()
            fn()
            dt = world.allreduce(time.perf_counter() - t0, op=MPI.MAX)
            if not check():
                raise SystemExit(f"rank {world.Get_rank()}: wrong result from {name} "
                                 f"in round {i}")
            if i >= warmup:
                times[name].append(dt)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, default=64.0)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    rank, n = world.Get_rank(), world.Get_size()
    _init(world)
    comm = world.Dup()
    numel = int(args.mib * 2**20) // 4
    nbytes = numel * 4
    tensor = torch.empty(numel, dtype=torch.float32)
    arr = tensor.numpy()  # the same memory for raw MPI and the process group
    total = float(n * (n + 1) // 2)

    def reset():
        tensor.fill_(rank + 1)

    def check():
        ok = bool((tensor == total).all())
        return world.allreduce(ok, op=MPI.LAND)

    def raw():
        reset()
        comm.Allreduce(MPI.IN_PLACE, [arr, MPI.FLOAT], op=MPI.SUM)

    def raw_nb():
        reset()
        comm.Iallreduce(MPI.IN_PLACE, [arr, MPI.FLOAT], op=MPI.SUM).Wait()

    def pg():
        reset()
        dist.all_reduce(tensor)

    # reset() is inside the timed region of all three, so the comparison stays fair.
    results = _time(world, {"raw mpi4py Allreduce": raw,
                            "raw mpi4py Iallreduce+Wait": raw_nb,
                            "process group all_reduce": pg}, check, args.rounds)
    fill = _time(world, {"fill": reset}, lambda: True, args.rounds)["fill"]
    if rank == 0:
        info = mpi_pg.describe()
        print(f"np={n} size={args.mib:g} MiB float32 SUM, median of {args.rounds} rounds, "
              f"progress mode={info['async_mode']}, {info['mpi_library_version'][:40]}")
        print(f"  (tensor.fill_ alone, inside every timing: {fill * 1e3:.2f} ms)")
        for name, t in results.items():
            algbw = nbytes / t / 1e9
            busbw = algbw * 2 * (n - 1) / n
            print(f"  {name:28s} {t * 1e3:9.2f} ms  algbw {algbw:6.3f} GB/s  "
                  f"busbw {busbw:6.3f} GB/s")
        ratio = results["process group all_reduce"] / results["raw mpi4py Allreduce"]
        print(f"  time ratio pg / raw Allreduce = {ratio:.3f} "
              f"(busbw ratio {1 / ratio:.3f})")
    comm.Free()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

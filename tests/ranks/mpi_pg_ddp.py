"""Rank script: DistributedDataParallel trains over the "mpi4py" process group.

A small float32 MLP is built with a different seed on every rank (DDP must
broadcast rank 0's weights), trained 10 SGD steps on this rank's slice of a
global batch, with tiny DDP buckets so that several allreduces are in flight
during backward. Checked on every rank:
  - after wrapping, the weights equal rank 0's initial weights;
  - step 1's gradients equal those of one model trained on the whole global batch
    (max abs diff <= 1e-6);
  - after 10 steps every rank holds bit-identical weights, and they stay close
    (<= 1e-5) to the single-process reference.
Exit status 1 (on every rank) if any check failed; failures are printed.

Run (from the repo root; as root also export OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    mpirun -np 2 python tests/ranks/mpi_pg_ddp.py
    mpirun -np 3 --oversubscribe python tests/ranks/mpi_pg_ddp.py
    HVD_VS_DDP_MPI_PG_PROGRESS=nonblocking mpirun -np 2 python tests/ranks/mpi_pg_ddp.py
tests/system/test_mpi_pg.py runs it (through tests/ranks/mpi_pg_parts.py).
"""
from __future__ import annotations

import datetime
import sys

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

from hvd_vs_ddp.backends import mpi_pg
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.rendezvous import store_for

LOCAL_BATCH, STEPS, LR = 8, 10, 0.1
GRAD_TOL, REF_TOL = 1e-6, 1e-5


def mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 4))


def flat(params) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in params])


def main() -> int:
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    # the project's own rendezvous: rank 0 opens a store, MPI shares its address
    store = store_for(detect(), datetime.timedelta(seconds=120))
    dist.init_process_group(mpi_pg.register(), rank=rank, world_size=size, store=store,
                            timeout=datetime.timedelta(seconds=120))
    failures: list[str] = []

    def check(name: str, ok: bool, detail: str) -> None:
        if not ok:
            failures.append(f"rank {rank}: {name}: {detail}")
            print("FAIL", failures[-1], flush=True)

    reference = mlp(seed=1000)  # rank 0's initial model, trained on the global batch
    model = mlp(seed=1000 + rank)
    # bucket_cap_mb ~ 2 KB: several buckets, so allreduces overlap the backward pass
    ddp = DDP(model, bucket_cap_mb=0.002)
    diff = (flat(model.parameters()) - flat(reference.parameters())).abs().max().item()
    check("initial broadcast", diff == 0.0, f"max abs diff {diff} to rank 0's weights")

    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(7)
    loss_fn = torch.nn.MSELoss()
    lo, hi = rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH
    for step in range(STEPS):
        x = torch.randn(LOCAL_BATCH * size, 16, generator=gen)
        y = torch.randn(LOCAL_BATCH * size, 4, generator=gen)
        opt.zero_grad()
        loss_fn(ddp(x[lo:hi]), y[lo:hi]).backward()
        ref_opt.zero_grad()
        loss_fn(reference(x), y).backward()
        if step == 0:
            grads = flat(p.grad for p in model.parameters())
            ref_grads = flat(p.grad for p in reference.parameters())
            gdiff = (grads - ref_grads).abs().max().item()
            check("step-1 gradients", gdiff <= GRAD_TOL,
                  f"max abs diff {gdiff:.3g} > {GRAD_TOL} to the global-batch gradient")
            if rank == 0:
                print(f"step-1 gradient max abs diff to single process: {gdiff:.3g}", flush=True)
        opt.step()
        ref_opt.step()

    mine = flat(model.parameters()).numpy()
    everyone = world.allgather(mine)
    same = all(np.array_equal(mine, other) for other in everyone)
    check("identical weights after 10 steps", same,
          "max abs diff between ranks "
          f"{max(float(np.abs(mine - o).max()) for o in everyone):.3g}")
    rdiff = float(np.abs(mine - flat(reference.parameters()).numpy()).max())
    check("close to single-process training", rdiff <= REF_TOL,
          f"max abs diff {rdiff:.3g} > {REF_TOL}")
    if rank == 0:
        print(f"after {STEPS} steps: weights identical on {size} ranks: {same}; "
              f"max abs diff to single process {rdiff:.3g}", flush=True)
    dist.destroy_process_group()
    failed = world.allreduce(len(failures))
    if rank == 0:
        print(f"DDP over mpi4py ({mpi_pg.describe()['async_mode']}): {failed} failures",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Worker: a distributed backend trains like `single` on the global batch.

Run under a launcher, e.g.
    torchrun --standalone --nproc-per-node 2 tests/ranks/train_equivalence.py ddp-gloo
    mpirun -np 2 python tests/ranks/train_equivalence.py ddp-gloo
    horovodrun -np 2 --gloo python tests/ranks/train_equivalence.py horovod

Checks, gathered from every rank so that all ranks agree on the verdict:
1. step 1's averaged gradients equal those of `single` trained on the
   concatenated global batch (max abs diff <= 1e-6, float32);
2. after STEPS steps every rank holds the same weights (bitwise);
3. those weights are within 1e-5 of `single`'s.
Writes rank 0's final weights to --save (for cross-backend comparisons) and
exits 1 with the failing check named, 0 when all pass.
"""
from __future__ import annotations

import argparse
import json

import torch

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.env import SINGLE
from hvd_vs_ddp.workloads import registry as workloads
from hvd_vs_ddp.workloads.loop import TrainConfig, train


def grads_of(model) -> list[torch.Tensor]:
    return [p.grad.detach().clone().cpu() for p in model.parameters()]


def flat(tensors) -> torch.Tensor:
    return torch.cat([t.reshape(-1).cpu() for t in tensors])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("backend")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--accumulation", type=int, default=1)
    ap.add_argument("--save", default=None)
    ap.add_argument("--losses", default=None, help="write rank 0's per-step losses (JSON)")
    args = ap.parse_args()

    workload = workloads.get("mlp", batch_size=8)
    config = TrainConfig(steps=args.steps)
    options = BackendOptions(accumulation_steps=args.accumulation, timeout_s=120)
    step1: dict[str, list[torch.Tensor]] = {}

    backend = registry.create(args.backend, options).setup()
    try:
        result = train(workload, backend, config, on_grads=lambda s, m:
                       step1.setdefault("dist", grads_of(m)) if s == 0 else None)
        mine = flat(p.detach() for p in result.model.parameters())
        everyone = backend.all_gather_object(mine)

        world = backend.world_size
        ref_wl = workload.with_(batch_size=workload.batch_size * world)
        with registry.create("single", BackendOptions(accumulation_steps=args.accumulation),
                             env=SINGLE) as ref:
            ref_result = train(ref_wl, ref, config, on_grads=lambda s, m:
                               step1.setdefault("ref", grads_of(m)) if s == 0 else None)
        ref_weights = flat(p.detach() for p in ref_result.model.parameters())

        grad_diff = (flat(step1["dist"]) - flat(step1["ref"])).abs().max().item()
        spread = max((w - everyone[0]).abs().max().item() for w in everyone)
        ref_diff = (mine - ref_weights).abs().max().item()
        failures = []
        if grad_diff > 1e-6:
            failures.append(f"step-1 gradient differs from single by {grad_diff:.3e} > 1e-6")
        if spread != 0.0:
            failures.append(f"ranks hold different weights after {args.steps} steps "
                            f"(max diff {spread:.3e})")
        if ref_diff > 1e-5:
            failures.append(f"weights differ from single by {ref_diff:.3e} > 1e-5")
        verdicts = backend.all_gather_object(failures)
        if backend.rank == 0:
            print(f"{args.backend} on {backend.env.launcher} x{world}: grad diff {grad_diff:.2e}, "
                  f"rank spread {spread:.2e}, vs single {ref_diff:.2e}", flush=True)
            if args.save:
                torch.save(mine, args.save)
            if args.losses:
                with open(args.losses, "w") as fh:
                    json.dump([float.hex(x) for x in result.losses], fh)
        bad = [f"rank {r}: {f}" for r, fs in enumerate(verdicts) for f in fs]
        for line in bad:
            print("FAIL", line, flush=True)
        return 1 if bad else 0
    finally:
        backend.close()


if __name__ == "__main__":
    from hvd_vs_ddp.harness.process_exit import hard_exit

    hard_exit(main())

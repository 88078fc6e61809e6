"""Worker: a distributed backend trains like `single` on the global batch.

Run under a launcher, e.g.
    torchrun --standalone --nproc-per-node 2 tests/ranks/train_equivalence.py ddp-gloo
    mpirun -np 2 python tests/ranks/train_equivalence.py ddp-gloo --accumulation 1,3
    horovodrun -np 2 --gloo python tests/ranks/train_equivalence.py horovod

Checks, gathered from every rank so that all ranks agree on the verdict:
1. step 1's averaged gradients equal those of `single` trained on the
   concatenated global batch (max abs diff <= 1e-6, float32);
2. after STEPS steps every rank holds the same weights (bitwise);
3. those weights are within 1e-5 of `single`'s.
`--accumulation 1,3` trains once per value in the same processes, each with a backend
set up and closed of its own (as the suites open one per test): one launch, two
scenarios. Rank 0 writes its final weights to --save and its losses to --losses (for
cross-backend and run-to-run comparisons; "{accumulation}" in either path becomes the
value), prints one summary line per value and a `FAIL accumulation N: ...` line per
failed check, and --verdicts DIR/accum{N}.json ({"failures": [...]}). Exits 1 when any
check failed, 0 when all passed.
"""
from __future__ import annotations

import argparse
import json
import os

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


def accumulations(text: str) -> list[int]:
    values = [int(v) for v in text.split(",")]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: positive integers, comma-separated")
    return values


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("backend")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--accumulation", type=accumulations, default=[1],
                    help="backward passes per step; a list (1,3) trains once per value")
    ap.add_argument("--save", default=None, help="rank 0's final weights ({accumulation})")
    ap.add_argument("--losses", default=None, help="rank 0's per-step losses, JSON "
                                                    "({accumulation})")
    ap.add_argument("--verdicts", default=None, help="a folder for accum{N}.json")
    args = ap.parse_args()
    for path in (args.save, args.losses):
        if len(args.accumulation) > 1 and path and "{accumulation}" not in path:
            ap.error(f"{path}: several --accumulation values need {{accumulation}} in it")
    failed = False
    for accumulation in args.accumulation:
        failed |= train_one(args, accumulation)
    return 1 if failed else 0


def train_one(args: argparse.Namespace, accumulation: int) -> bool:
    """One training at `accumulation` against `single`: True when a check failed."""
    workload = workloads.get("mlp", batch_size=8)
    config = TrainConfig(steps=args.steps)
    options = BackendOptions(accumulation_steps=accumulation, timeout_s=120)
    step1: dict[str, list[torch.Tensor]] = {}

    def path(template: str | None) -> str | None:
        return template and template.replace("{accumulation}", str(accumulation))

    backend = registry.create(args.backend, options).setup()
    try:
        result = train(workload, backend, config, on_grads=lambda s, m:
                       step1.setdefault("dist", grads_of(m)) if s == 0 else None)
        mine = flat(p.detach() for p in result.model.parameters())
        everyone = backend.all_gather_object(mine)

        world = backend.world_size
        ref_wl = workload.with_(batch_size=workload.batch_size * world)
        with registry.create("single", BackendOptions(accumulation_steps=accumulation),
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
        bad = [f"rank {r}: {f}" for r, fs in enumerate(verdicts) for f in fs]
        if backend.rank == 0:
            print(f"{args.backend} on {backend.env.launcher} x{world}, accumulation "
                  f"{accumulation}: grad diff {grad_diff:.2e}, rank spread {spread:.2e}, "
                  f"vs single {ref_diff:.2e}", flush=True)
            if args.save:
                torch.save(mine, path(args.save))
            if args.losses:
                with open(path(args.losses), "w") as fh:
                    json.dump([float.hex(x) for x in result.losses], fh)
            if args.verdicts:
                with open(os.path.join(args.verdicts, f"accum{accumulation}.json"), "w") as fh:
                    json.dump({"failures": bad}, fh)
            for line in bad:
                print(f"FAIL accumulation {accumulation}:", line, flush=True)
        return bool(bad)
    finally:
        backend.close()


if __name__ == "__main__":
    from hvd_vs_ddp.common.process_exit import hard_exit

    hard_exit(main())

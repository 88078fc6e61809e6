"""Does reading DDP's own statistics every step cost throughput? On vs off, same run.

One DDP model per workload; after warm-up (beyond DDP's always-sampled first 10
iterations), blocks of steps alternate ABBA... between "on" (hvd_vs_ddp/harness/ddp_stats.py with
sample rate 1: DDP times every iteration and a forward hook reads the values) and
"off" (sample rate 10**9, no hook). A step's time is the slowest rank's. The overhead
is median(on steps)/median(off steps) - 1 with the 95% interval of hvd_vs_ddp.run_model.stats'
two-level bootstrap, blocks taking the place of repetitions (so the interval covers
the drift between blocks). The suites record the statistics in the timed rounds only if
this stays within 3%.

    torchrun --standalone --nproc-per-node 2 benchmarks/ddp_stats_overhead.py \
        --workloads resnet50,gpt --pairs 6 --steps 4
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import torch.distributed as dist

from hvd_vs_ddp.backends import registry as backends
from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.harness import threads
from hvd_vs_ddp.harness.ddp_stats import DDPStats
from hvd_vs_ddp.run_model.stats import ratio_ci
from hvd_vs_ddp.workloads import registry as workloads
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

OFF = 10**9


def block(trainer: Trainer, steps: int, on: bool) -> list[float]:
    model = trainer.model
    stats = DDPStats(model, 1) if on else None
    if not on:
        model._set_ddp_runtime_logging_sample_rate(OFF)
    times = trainer.run(steps)
    if stats is not None:
        stats.close()
        assert len(stats.steps) >= steps - 1, "DDP wrote no statistics while on"
    out: list[list[float]] = [[] for _ in range(dist.get_world_size())]
    dist.all_gather_object(out, times)
    return np.max(np.asarray(out), axis=0).tolist()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="resnet50,gpt")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=12)
    args = ap.parse_args()
    with backends.create("ddp-gloo", BackendOptions()) as be:
        threads.apply(threads.decide(be.env.local_size, 0))
        for name in args.workloads.split(","):
            trainer = Trainer(workloads.get(name), be, TrainConfig(steps=1))
            trainer.run(args.warmup)
            blocks: dict[bool, list[list[float]]] = {True: [], False: []}
            for p in range(args.pairs):
                for on in ((True, False) if p % 2 == 0 else (False, True)):  # ABBA
                    blocks[on].append(block(trainer, args.steps, on))
            if be.rank == 0:
                ci = ratio_ci(blocks[True], blocks[False])
                print(json.dumps({
                    "workload": name, "world_size": be.world_size, "pairs": args.pairs,
                    "steps_per_block": args.steps,
                    "median_step_on_s": float(np.median(np.concatenate(blocks[True]))),
                    "median_step_off_s": float(np.median(np.concatenate(blocks[False]))),
                    "overhead_pct": (ci.ratio - 1) * 100,
                    "interval_pct": [(ci.lo - 1) * 100, (ci.hi - 1) * 100]}), flush=True)


if __name__ == "__main__":
    main()

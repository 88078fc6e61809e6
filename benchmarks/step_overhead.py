"""What the harness adds to a training step on the host, in microseconds: a benchmark.

On a GPU every microsecond of host work in a step that the device does not hide is time
the figure charges to the library. On the CPU nothing runs ahead, so the host
work the harness adds shows directly: this times, in one process and in alternating
blocks (so drift hits both alike), the project's Trainer step (hvd_vs_ddp/workloads/loop.py
Trainer.run, `single` backend, the input mode given, the sync guard on or off) against the
minimal loop's step (benchmarks/minimal/loop_parts.py `train_step`: zero_grad / forward /
loss / backward / step) on the very same model, optimizer and a fixed batch, on a small
MLP where the step's own work is tens of microseconds; one intra-op thread. It prints the
median microseconds per step of each and their difference, the harness's host cost per step.

    python benchmarks/step_overhead.py [--input device] [--guard on] [--blocks 30] [--steps 200]
    PYTHONPATH=OTHER_CHECKOUT python benchmarks/step_overhead.py --input memory  # another commit

Run it on an otherwise idle machine: every figure is a timing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "minimal"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default="device")
    ap.add_argument("--guard", choices=("on", "off"), default="on")
    ap.add_argument("--blocks", type=int, default=30)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    import torch
    from loop_parts import train_step

    import hvd_vs_ddp
    from hvd_vs_ddp.backends import registry as backends
    from hvd_vs_ddp.workloads import registry as workloads
    from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

    torch.set_num_threads(1)
    spec = workloads.get("mlp", batch_size=args.batch)
    with backends.create("single") as backend:
        trainer = Trainer(spec, backend, TrainConfig(steps=1, input_mode=args.input))
        trainer.guarded = args.guard == "on"  # (an older Trainer has no guard: ignored)
        model, opt = trainer.model, trainer.optimizer
        x, y = next(iter(torch.utils.data.DataLoader(spec.build_dataset(spec.seed),
                                                     batch_size=spec.batch_size)))

        step = train_step(model, opt, spec.loss, x, y)

        def minimal(n: int) -> None:
            for _ in range(n):
                step()

        def block(fn) -> float:
            t0 = time.perf_counter()
            fn(args.steps)
            return (time.perf_counter() - t0) / args.steps * 1e6

        trainer.run(50)
        minimal(50)
        suite, bare = [], []
        for _ in range(args.blocks):
            suite.append(block(trainer.run))
            bare.append(block(minimal))
    s, m = statistics.median(suite), statistics.median(bare)
    print(json.dumps({"package": hvd_vs_ddp.__file__, "input": args.input,
                      "guard": args.guard, "trainer_us": round(s, 1),
                      "minimal_us": round(m, 1), "harness_us": round(s - m, 1),
                      "blocks": args.blocks, "steps": args.steps}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

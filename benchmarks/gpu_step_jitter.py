"""A GPU rank's step-to-step spread, measured: the straggler term's GPU default.

The projection stretches every rank's step to the expected slowest of N
(hvd_vs_ddp/projection/stragglers.py); on a target without a run it draws the spread,
the lognormal sigma of a step relative to its median, over stragglers.GPU_SIGMA. This
measures it on one GPU with the minimal single-process loop (benchmarks/minimal/: ResNet-50,
fp32, 224 px, 1000 classes, the workload's SGD with momentum, one fixed batch on the GPU),
each step timed on its own (torch.cuda.synchronize() before and after, so the step is the
host's and the GPU's together), W warm-up steps, then N timed; it prints the median step,
sigma fitted as the projection fits it, and the slowest of N steps the lognormal predicts
against the empirical bootstrap.

    python benchmarks/gpu_step_jitter.py [--batch-size 64] [--steps 300] [--warmup 30]
        [--json OUT.json]

Needs a CUDA GPU. About 30 s on an H100. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]),
                str(Path(__file__).resolve().parent / "minimal")]

from loop_parts import parse, setup, timed, train_step  # noqa: E402

from hvd_vs_ddp.projection import stragglers  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu_step_jitter: no CUDA GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    loop = parse(["--workload", "resnet50", "--param", "image_size=224", "--param",
                  "classes=1000", "--batch", str(args.batch_size)])
    model, optimizer, loss_fn, x, y = setup(loop, dev, local_ranks=1)
    step = train_step(model, optimizer, loss_fn, x, y)
    t = np.asarray(timed(step, dev, args.warmup, args.steps, each=True))
    sigma = stragglers.fit_sigma([t])
    rel = t / np.median(t)
    out = {"gpu": torch.cuda.get_device_name(0), "batch": args.batch_size,
           "steps": len(t), "median_ms": float(np.median(t) * 1000),
           "p90_ms": float(np.percentile(t, 90) * 1000), "max_ms": float(t.max() * 1000),
           "sigma": sigma,
           "slowest_of": {n: {"lognormal": stragglers.expected_max(sigma, n),
                              "bootstrap": stragglers.empirical_expected_max(rel, n)}
                          for n in (8, 64, 512, 1024)}}
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What each library adds to a training step on one GPU, measured: a benchmark.

The projection (docs/projection.md, 'The GPU-side terms') charges Horovod a host tail
(after synchronize() the GPU waits while the CPU launches the optimizer, zero_grad and
the next step) and Python's synchronize walk, from ranges no datasheet gives, and says
DDP's CPU stays ahead so that its work is hidden. This measures both on one GPU, where
no network is involved: every figure is what the library's own machinery costs.

For each batch size, fresh processes in a shuffled interleaved order, R repetitions, each
the minimal loop of benchmarks/minimal/ (launched by benchmarks/fidelity.py's `launch`):
ResNet-50 (1000 classes, fp32, 224 px), the workload's SGD with momentum, one fixed batch
on the GPU; zero_grad / forward / loss / backward / step, nothing else.
  single   single_loop.py, no library
  ddp      ddp_loop.py: DistributedDataParallel over NCCL at world size 1 (torchrun), its
           defaults (25 MiB buckets, gradient_as_bucket_view False)
  horovod  horovod_loop.py --hooks-at-one-rank: hvd.DistributedOptimizer over NCCL at
           size 1 with its gradient hooks registered as at size > 1, so every gradient is
           enqueued by its hook, fused by the background thread, allreduced by NCCL (one
           rank), waited for in synchronize(), then step()
  suite-*  (--suite) suites/test_throughput.py::test_throughput at one rank for single and
           ddp-nccl: the suite's own figure for the same model, batch and image size (what
           the suite adds on a GPU), in rounds of --suite-steps-per-round steps (default
           10) filling --steps
Each loop warms up W steps, then times N steps back to back (one torch.cuda.synchronize()
before and after: the CPU keeps whatever lead it has). The table gives per configuration
the median ms per step over repetitions and each library's cost, library - single, with
the range over repetitions.

    python benchmarks/gpu_step_costs.py [--batch-sizes 32,64] [--repeat 3] [--steps 40]
        [--warmup 15] [--suite [--suite-steps-per-round 10]] [--json OUT.json]

Needs a CUDA GPU, and Horovod built with NCCL for the horovod rows (left out, with a
line, where it is missing). About 20 s per process on an H100. Run it on an otherwise
idle machine: every figure is a timing.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fidelity import launch

IMAGE = 224
CLASSES = 1000
# row -> (fidelity's configuration, kind, more options for the minimal loop)
ROWS = {"single": ("single", "minimal", ()), "ddp": ("ddp", "minimal", ()),
        "horovod": ("horovod", "minimal", ("--hooks-at-one-rank",)),
        "suite-single": ("single", "suite", ()), "suite-ddp-nccl": ("ddp", "suite", ())}


def ms_per_step(row: str, batch: int, args, folder: Path, hvd_controller: str) -> float:
    config, kind, loop_options = ROWS[row]
    shape = {"warmup": args.warmup, "steps": args.steps, "batch": batch,
             "precision": "fp32", "channels_last": False, "loop_options": loop_options,
             "params": {"image_size": IMAGE, "classes": CLASSES},
             "steps_per_round": args.suite_steps_per_round}
    samples_per_s, _ = launch(kind, config, 1, "resnet50", shape, folder, True,
                              hvd_controller=hvd_controller)
    return batch * 1e3 / samples_per_s


def _have_horovod_nccl() -> str | None:
    probe = ("import horovod.torch as hvd; import sys; "
             "sys.exit(0 if hvd.nccl_built() else 3)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if proc.returncode == 0:
        return None
    return "not built with NCCL" if proc.returncode == 3 else "not importable"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-sizes", default="32,64")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--suite", action="store_true", help="also the suite's own figures")
    ap.add_argument("--suite-steps-per-round", type=int, default=10,
                    help="the suite's --steps-per-round (1: the device drained around "
                         "every step)")
    ap.add_argument("--horovod-controller", choices=("gloo", "mpi"), default="gloo")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_step_costs: no CUDA GPU here; this benchmark needs one", file=sys.stderr)
        return 2
    batches = [int(b) for b in args.batch_sizes.split(",") if b]
    kinds = ["single", "ddp"]
    missing = _have_horovod_nccl()
    if missing:
        print(f"gpu_step_costs: Horovod {missing}: its rows are left out", flush=True)
    else:
        kinds.append("horovod")
    suites = ["suite-single", "suite-ddp-nccl"] if args.suite else []
    rng = random.Random(args.seed)
    got: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            order = [(k, b) for b in batches for k in kinds + suites]
            rng.shuffle(order)
            for kind, batch in order:
                t0 = time.monotonic()
                ms = ms_per_step(kind, batch, args, Path(tmp), args.horovod_controller)
                got.setdefault((kind, batch), []).append(ms)
                print(f"rep {rep + 1} batch {batch:3d} {kind:15s} {ms:8.2f} ms/step "
                      f"({time.monotonic() - t0:.0f} s)", flush=True)
    print(f"\nResNet-50 fp32 {IMAGE} px on {torch.cuda.get_device_name(0)}, torch "
          f"{torch.__version__}; median of {args.repeat} processes, {args.steps} steps each")
    for batch in batches:
        base = got["single", batch]
        print(f"batch {batch}: single {statistics.median(base):.2f} ms")
        for kind in kinds[1:] + suites:
            mine = got[kind, batch]
            cost = [m - b for m, b in zip(mine, base)]  # same repetition, side by side
            print(f"  {kind:15s} {statistics.median(mine):8.2f} ms  cost "
                  f"{statistics.median(cost):+6.2f} ms (repetitions {min(cost):+.2f} to "
                  f"{max(cost):+.2f}), single/{kind} "
                  f"{statistics.median(base) / statistics.median(mine):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
             "steps": args.steps, "warmup": args.warmup,
             "ms": {f"{k}@{b}": v for (k, b), v in got.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

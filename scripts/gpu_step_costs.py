"""What each library adds to a training step on one GPU, measured: a benchmark.

The projection (docs/projection.md, 'The GPU-side terms') charges Horovod a host tail
(after synchronize() the GPU waits while the CPU launches the optimizer, zero_grad and
the next step) and Python's synchronize walk, from ranges no datasheet gives, and says
DDP's CPU stays ahead so that its work is hidden. This measures both on one GPU, where
no network is involved: every figure is what the library's own machinery costs.

For each batch size, fresh processes in a shuffled interleaved order, R repetitions:
  single   torchvision's ResNet-50 (1000 classes, fp32, 224 px), SGD with momentum
           (foreach, as torch picks on CUDA), one fixed random batch on the GPU;
           zero_grad / forward / loss / backward / step, nothing else
  ddp      the same in DistributedDataParallel over NCCL at world size 1, its defaults
           (25 MiB buckets, gradient_as_bucket_view False)
  horovod  the same with hvd.DistributedOptimizer over NCCL at size 1. Horovod registers
           its gradient hooks only at size > 1 (horovod/torch/optimizer.py) unless
           HOROVOD_ELASTIC=1; this sets it after hvd.init() (so the controller is the
           plain one) and before the optimizer is built, so every gradient goes the way
           it goes at size > 1: enqueued by its hook, fused by the background thread,
           copied in, allreduced by NCCL (one rank), copied out, waited for in
           synchronize(), then step()
  suite-*  (--suite) suites/test_throughput.py::test_throughput at one rank under
           torchrun for single and ddp-nccl: the suite's own figure for the same model,
           batch and image size (what the suite adds on a GPU: its fidelity), in rounds
           of --suite-steps-per-round steps (default 10) filling --steps
Each loop process warms up W steps, then times N steps back to back (one
torch.cuda.synchronize() before and after: the CPU keeps whatever lead it has), and
prints ms per step. The table gives per configuration the median over repetitions and
each library's cost, library - single, with the range over repetitions.

    python scripts/gpu_step_costs.py [--batch-sizes 32,64] [--repeat 3] [--steps 40]
        [--warmup 15] [--suite [--suite-steps-per-round 10]] [--json OUT.json]

Needs a CUDA GPU, and Horovod built with NCCL for the horovod rows (left out, with a
line, where it is missing). About 20 s per process on an H100. Run it on an otherwise
idle machine: every figure is a timing.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = 224
CLASSES = 1000


def _loop(kind: str, batch: int, warmup: int, steps: int) -> None:
    """One configuration in this process; prints one JSON line."""
    import torch
    import torch.nn.functional as F
    import torchvision

    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    model = torchvision.models.resnet50(num_classes=CLASSES).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    if kind == "ddp":
        import torch.distributed as dist

        from hvd_vs_ddp.recovery.launch import free_port

        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}",
                                rank=0, world_size=1, device_id=dev)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    elif kind == "horovod":
        import horovod.torch as hvd

        hvd.init()
        os.environ["HOROVOD_ELASTIC"] = "1"  # hooks at size 1, read when the optimizer is built
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        if not opt._grad_accs:  # the hooks it registers, one per parameter
            raise SystemExit("horovod: the DistributedOptimizer registered no hooks")
    x = torch.randn(batch, 3, IMAGE, IMAGE, device=dev)
    y = torch.randint(0, CLASSES, (batch,), device=dev)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize(dev)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize(dev)
    ms = (time.perf_counter() - start) * 1e3 / steps
    print("STEP " + json.dumps({"kind": kind, "batch": batch, "ms": ms,
                                "gpu": torch.cuda.get_device_name(dev)}), flush=True)


def _env() -> dict[str, str]:
    """This checkout importable in every process started (the project, its launchers)."""
    return dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def _run_loop(kind: str, batch: int, args) -> float:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--loop", kind, "--batch", str(batch),
           "--warmup", str(args.warmup), "--steps", str(args.steps)]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("STEP ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{kind} at batch {batch} failed: {proc.stderr.strip()[-1500:]}")
    return float(json.loads(line[5:])["ms"])


def _run_suite(backend: str, batch: int, args, folder: Path) -> float:
    from hvd_vs_ddp.backends import launchers

    out = folder / f"{backend}-{batch}-{time.monotonic_ns()}.json"
    argv = ["-m", "pytest", "suites/test_throughput.py::test_throughput", "-q",
            "-p", "no:cacheprovider", "--backends", backend, "--workloads", "resnet50",
            "--workload-param", f"resnet50:image_size={IMAGE}",
            "--workload-param", f"resnet50:batch_size={batch}",
            "--workload-param", f"resnet50:classes={CLASSES}",
            "--warmup-steps", str(args.warmup),
            "--rounds", str(max(args.steps // args.suite_steps_per_round, 1)),
            "--steps-per-round", str(args.suite_steps_per_round),
            "--benchmark-json", str(out)]
    cmd = launchers.command("torchrun", 1, argv)
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"suite {backend} at batch {batch} failed: "
                           f"{(proc.stdout + proc.stderr).strip()[-1500:]}")
    (bench,) = json.loads(out.read_text())["benchmarks"]
    return batch * 1e3 / float(bench["extra_info"]["samples_per_s_median"])


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
                         "every step, as the suite timed before 2026-11-26)")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--loop", help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.loop:
        _loop(args.loop, args.batch, args.warmup, args.steps)
        return 0
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
                if kind.startswith("suite-"):
                    ms = _run_suite(kind[len("suite-"):], batch, args, Path(tmp))
                else:
                    ms = _run_loop(kind, batch, args)
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

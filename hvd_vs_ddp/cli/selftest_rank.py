"""What one rank of `hvd-vs-ddp doctor --selftest` runs: a few real training steps or a
raw GPU check, then one line "SELFTEST OK ..." from rank 0 and exit 0 (anything else:
an exception and a non-zero exit, which fails the check).

    python -m hvd_vs_ddp.cli.selftest_rank train --backend single --device cpu
    torchrun --standalone --nproc-per-node 2 --no-python python -m hvd_vs_ddp.cli.selftest_rank \
        train --backend ddp-gloo --device cpu
    horovodrun -np 1 --gloo -H localhost:1 python -m hvd_vs_ddp.cli.selftest_rank \
        train --backend horovod --precision fp16 --accumulation 2
    torchrun --standalone --nproc-per-node 8 --no-python python \
        -m hvd_vs_ddp.cli.selftest_rank nccl-pairs
    CUDA_VISIBLE_DEVICES=3 python -m hvd_vs_ddp.cli.selftest_rank nvml

`train` checks, beyond a clean exit: finite losses, every rank holding the same weights
afterwards, the model on the device asked for, every rank on a GPU of its own (their
UUIDs gathered and compared: the placement's proof, not the local rank it came from),
DataParallel's outputs coming from every GPU in the precision asked for, channels_last
weights when asked for, and a finite GradScaler scale with fp16.
"""
from __future__ import annotations

import argparse
import math
import time

import torch


def _train(args) -> str:
    from hvd_vs_ddp.backends import registry
    from hvd_vs_ddp.backends.base import BackendOptions
    from hvd_vs_ddp.backends.env import detect
    from hvd_vs_ddp.workloads import registry as workloads
    from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

    options = BackendOptions(accumulation_steps=args.accumulation, timeout_s=args.timeout,
                             device=args.device, compression=args.compression)
    env = detect()
    if args.gpu_per_task:  # as Slurm's --gpus-per-task: each rank sees its own GPU only
        import os

        os.environ["CUDA_VISIBLE_DEVICES"] = "0" if args.same_gpu else str(env.local_rank)
    backend = registry.create(args.backend, options, env=env).setup()
    try:
        if args.workload == "resnet50":  # the smallest ResNet-50 step (channels_last)
            workload = workloads.get("resnet50", batch_size=4, image_size=32, classes=10,
                                     samples=64)
        else:
            workload = workloads.get("mlp", batch_size=8, hidden=32, samples=256)
        config = TrainConfig(steps=args.steps, precision=args.precision,
                             channels_last=args.channels_last)
        trainer = Trainer(workload, backend, config)
        replicas = _watch_replicas(trainer.model)
        trainer.run(args.steps)
        losses = trainer.global_losses()
        if not all(math.isfinite(x) for x in losses):
            raise AssertionError(f"non-finite loss: {losses}")
        params = list(trainer.model.parameters())
        want = "cuda" if args.device == "auto" and torch.cuda.is_available() else "cpu"
        if params[0].device.type != want or (want == "cuda" and params[0].device != backend.device):
            raise AssertionError(f"model on {params[0].device}, expected {backend.device}")
        if args.channels_last:
            conv = next(p for p in params if p.dim() == 4)
            if not conv.is_contiguous(memory_format=torch.channels_last):
                raise AssertionError("channels_last asked for, but conv weights are not NHWC")
        if trainer.scaler is not None and not math.isfinite(trainer.scaler.get_scale()):
            raise AssertionError(f"GradScaler scale is {trainer.scaler.get_scale()}")
        checksum = float(sum(p.detach().double().sum().item() for p in params))
        sums = backend.all_gather_object(checksum)
        if max(sums) - min(sums) > 1e-6 * max(1.0, abs(checksum)):
            raise AssertionError(f"ranks hold different weights: checksums {sums}")
        gpus = _placement_proof(backend)
        worked = _replicas_worked(replicas, args.precision)
        meta = backend.metadata()
        extra = "".join(f" {k}={meta[k]}" for k in ("tensor_ops", "controller", "dp_devices",
                                                      "process_group") if k in meta)
        return (f"{args.backend} x{backend.world_size} on {backend.device}, {args.precision}, "
                f"loss {losses[0]:.3f}->{losses[-1]:.3f}{extra}{gpus}{worked}")
    finally:
        backend.close()


def _placement_proof(backend) -> str:
    """Every rank's physical GPU by UUID (not the local rank it was derived from), and
    its host: two ranks on one GPU of one host fail the check."""
    import socket

    from hvd_vs_ddp.backends.placement import gpu_uuid

    mine = (socket.gethostname(), gpu_uuid(backend.device.index)
            if backend.device.type == "cuda" else None)
    everyone = backend.all_gather_object(mine)
    if mine[1] is None:
        return ""
    if len(set(everyone)) != len(everyone):
        raise AssertionError(f"ranks share a GPU (host, UUID by rank): {everyone}")
    return f" gpus={','.join(u[4:12] if u else '?' for _, u in everyone)} (distinct)"


def _watch_replicas(model) -> list | None:
    """DataParallel: record the device and dtype of every replica's output (the hook is
    copied into each replica), so that every GPU is shown to have worked."""
    if not isinstance(model, torch.nn.DataParallel):
        return None
    seen: list = []
    model.module.register_forward_hook(
        lambda mod, inp, out: seen.append((out.device.index, out.dtype)))
    return seen


def _replicas_worked(seen: list | None, precision: str) -> str:
    if seen is None:
        return ""
    want = set(range(torch.cuda.device_count()))
    got = {d for d, _ in seen}
    if got != want:
        raise AssertionError(f"DataParallel: GPUs {sorted(want - got)} computed nothing "
                             f"(outputs came from {sorted(got)})")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    wrong = {str(t) for _, t in seen if dtype is not None and t != dtype}
    if wrong:
        raise AssertionError(f"DataParallel replicas computed in {', '.join(sorted(wrong))}, "
                             f"not {dtype} ({precision})")
    return f" replicas on GPUs {sorted(got)} in {seen[-1][1]}"


def _nccl_pairs(args) -> str:
    """One NCCL allreduce inside every pair of ranks (one GPU each): every GPU-GPU link."""
    import datetime

    import torch.distributed as dist

    from hvd_vs_ddp.backends.env import detect
    from hvd_vs_ddp.backends.placement import here
    from hvd_vs_ddp.backends.rendezvous import store_for

    env = detect()
    torch.cuda.set_device(here(env, on_gpu=True, nccl=True).ordinal)  # one GPU per rank
    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("nccl", store=store_for(env, timeout), rank=env.rank,
                            world_size=env.world_size, timeout=timeout)
    n, pairs = env.world_size, 0
    try:
        for a in range(n):
            for b in range(a + 1, n):
                group = dist.new_group([a, b])  # every rank creates every group
                if env.rank in (a, b):
                    t = torch.full((1 << 20,), float(env.rank + 1), device="cuda")
                    dist.all_reduce(t, group=group)  # type: ignore[arg-type]
                    if not torch.all(t == a + b + 2):
                        raise AssertionError(f"allreduce of GPUs {a},{b} gave {t[0].item()}")
                pairs += 1
        torch.cuda.synchronize()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return f"{pairs} GPU pair(s) of {n} allreduced over NCCL {torch.cuda.nccl.version()}"


def _nvml(args) -> str:
    """The monitor samples this process's GPU (found by UUID), and sees memory we allocate."""
    from hvd_vs_ddp.harness.monitor import Monitor

    index = torch.cuda.current_device()
    uuid = f"GPU-{torch.cuda.get_device_properties(index).uuid}"
    mon = Monitor(0, index, interval_s=0.05).start()
    time.sleep(0.3)
    block = torch.ones(1 << 28, device="cuda")  # 1 GiB
    torch.cuda.synchronize()
    time.sleep(0.4)
    series = mon.stop()
    del block
    gpu = series.get("gpu")
    if not gpu or not series["gpu_mem_mb"]:
        raise AssertionError("the monitor took no GPU sample (is nvidia-ml-py installed?)")
    if gpu["uuid"] != uuid:
        raise AssertionError(f"monitor sampled {gpu['uuid']}, this process uses {uuid}")
    grew = max(series["gpu_mem_mb"]) - min(series["gpu_mem_mb"])
    if grew < 900:
        raise AssertionError(f"NVML saw {grew:.0f} MiB more after a 1 GiB allocation")
    return (f"cuda:{index} = NVML {gpu['nvml_index']} ({uuid[:12]}...), "
            f"saw +{grew:.0f} MiB of a 1 GiB allocation")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("train", "nccl-pairs", "nvml"))
    ap.add_argument("--backend", default="single")
    ap.add_argument("--device", choices=("auto", "cpu"), default="auto")
    ap.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32")
    ap.add_argument("--accumulation", type=int, default=1)
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--compression", choices=("none", "fp16"), default="none")
    ap.add_argument("--workload", choices=("mlp", "resnet50"), default="mlp")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per collective")
    ap.add_argument("--gpu-per-task", action="store_true",
                    help="each rank sees only the GPU of its local rank (Slurm's "
                         "--gpus-per-task=1), before CUDA starts")
    ap.add_argument("--same-gpu", action="store_true",
                    help="with --gpu-per-task: every rank is given GPU 0 (a wrong binding "
                         "the placement must refuse by UUID)")
    args = ap.parse_args(argv)
    line = {"train": _train, "nccl-pairs": _nccl_pairs, "nvml": _nvml}[args.mode](args)
    from hvd_vs_ddp.backends.env import detect

    if detect().rank == 0:
        print(f"SELFTEST OK {line}", flush=True)
    return 0


if __name__ == "__main__":
    from hvd_vs_ddp.common.process_exit import hard_exit

    hard_exit(main())  # no C++ teardown: torch's may abort a finished rank (SIGABRT)

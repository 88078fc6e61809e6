"""The minimal DDP loop (the suite's `ddp-nccl` on GPUs, `ddp-gloo` on the CPU), under
torchrun: DDP's defaults, one batch on the device; see loop_parts.py beside it.

    torchrun --standalone --nproc-per-node 1 benchmarks/minimal/ddp_loop.py --batch 64
"""
import os

import torch
import torch.distributed as dist
from loop_parts import parse, report, setup, train_step

args = parse()
cuda = torch.cuda.is_available()
local = int(os.environ.get("LOCAL_RANK", 0))
device = torch.device("cuda", local) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)
dist.init_process_group("nccl" if cuda else "gloo")
model, optimizer, loss_fn, x, y = setup(args, device, int(os.environ.get("LOCAL_WORLD_SIZE", 1)),
                                        local)
model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local] if cuda else None)
step = train_step(model, optimizer, loss_fn, x, y, args.precision)


def gather(times: list[float]) -> list:
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, times)
    return out


report(step, args, device, x.shape[0], dist.get_rank(), dist.get_world_size(), gather)
dist.destroy_process_group()

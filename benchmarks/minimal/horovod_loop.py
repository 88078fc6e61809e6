"""The minimal Horovod loop (the suite's `horovod`), under horovodrun or mpirun:
hvd.DistributedOptimizer with its defaults, the initial broadcasts, one batch on the
device; see loop_parts.py beside it. At one rank Horovod registers no gradient hooks (its
DistributedOptimizer does that only at size > 1, horovod/torch/optimizer.py), as in the
suite; `--hooks-at-one-rank` sets HOROVOD_ELASTIC=1 after hvd.init() (the controller stays
the plain one) and before the optimizer is built, so that each gradient goes the way it goes
at size > 1: enqueued by its hook, fused, allreduced (one rank), waited for in synchronize().

    horovodrun -np 1 python benchmarks/minimal/horovod_loop.py --batch 64
    python benchmarks/minimal/horovod_loop.py --batch 32 --hooks-at-one-rank
"""
import os

import horovod.torch as hvd
import torch
from loop_parts import parse, report, setup, train_step

args = parse()
hvd.init()
cuda = torch.cuda.is_available()
device = torch.device("cuda", hvd.local_rank()) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)
model, optimizer, loss_fn, x, y = setup(args, device, hvd.local_size(), hvd.local_rank())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
if args.hooks_at_one_rank:
    os.environ["HOROVOD_ELASTIC"] = "1"  # read when the optimizer is built
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
if args.hooks_at_one_rank and not optimizer._grad_accs:  # one hook per parameter
    raise SystemExit("horovod_loop: the DistributedOptimizer registered no hooks")
step = train_step(model, optimizer, loss_fn, x, y, args.precision)


report(step, args, device, x.shape[0], hvd.rank(), hvd.size(), hvd.allgather_object)

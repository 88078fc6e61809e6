"""The minimal Horovod loop (the suite's `horovod`), under horovodrun or mpirun:
hvd.DistributedOptimizer with its defaults, the initial broadcasts, one batch on the
device; see loop_parts.py beside it. At one rank Horovod registers no gradient hooks (its
DistributedOptimizer does that only at size > 1), as in the suite.

    horovodrun -np 1 python scripts/minimal/horovod_loop.py --batch 64
"""
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
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
step = train_step(model, optimizer, loss_fn, x, y, args, device)


report(step, args, device, x.shape[0], hvd.rank(), hvd.size(), hvd.allgather_object)

"""The minimal loop of one process (the suite's `single`): see loop_parts.py beside it.

    python benchmarks/minimal/single_loop.py --workload resnet50 --batch 32
"""
import torch
from loop_parts import parse, report, setup, train_step

args = parse()
device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
model, optimizer, loss_fn, x, y = setup(args, device, local_ranks=1)
step = train_step(model, optimizer, loss_fn, x, y, args.precision)


report(step, args, device, x.shape[0], 0, 1, lambda times: [times])

"""hvd-vs-ddp: Horovod or PyTorch DDP? Evidence from your own machines.

The command-line entry point is `hvd-vs-ddp` (hvd_vs_ddp.cli).
"""
__version__ = "0.1.0"

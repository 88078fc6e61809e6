"""Adapters that present one training interface over DDP, Horovod and baselines.

See hvd_vs_ddp/backends/base.py for the interface and hvd_vs_ddp/backends/registry.py for the names.
"""

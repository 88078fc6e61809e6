"""What we train (declarative specs) and the one training loop every backend runs.

See hvd_vs_ddp/workloads/spec.py, hvd_vs_ddp/workloads/registry.py and hvd_vs_ddp/workloads/loop.py.
"""

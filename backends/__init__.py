"""Adapters that present one training interface over DDP, Horovod and baselines.

See backends/base.py for the interface and backends/registry.py for the names.
"""

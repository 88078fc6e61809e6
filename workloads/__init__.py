"""What we train (declarative specs) and the one training loop every backend runs.

See workloads/spec.py, workloads/registry.py and workloads/loop.py.
"""

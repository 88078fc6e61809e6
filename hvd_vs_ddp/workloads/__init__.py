"""What we train (declarative specs) and the one training loop every backend runs.

See hvd_vs_ddp/workloads/spec.py, hvd_vs_ddp/workloads/registry.py and hvd_vs_ddp/workloads/loop.py.
Your own model is a workload too (docs/own-model.md): a factory returning a `Workload`,
its parameters declared with `declare(Param(...))`:

    from hvd_vs_ddp.workloads import Param, Workload, declare
"""
from hvd_vs_ddp.workloads.params import Param, declare
from hvd_vs_ddp.workloads.spec import Workload

__all__ = ["Param", "Workload", "declare"]

"""The loss bound of a knob set that changes the maths, checked in the throughput suite.

fp16/bf16 gradient compression, PowerSGD and Adasum train differently from the exact
average by design; each such knob set states how far (hvd_vs_ddp/harness/knobs.py,
KnobSet.loss_bound). After a throughput cell of such a set, `check` trains `single` on
the same global batches in this process (the convergence suite's reference: each global
batch cut into the ranks' shards, fp32, an exact average), once per workload, world size
and step count in a session, and compares the mean loss of the last half of the steps.

    from hvd_vs_ddp.harness import loss_bound
    result = loss_bound.check(knobs, workload, backend, losses)  # None: the set keeps the maths
    assert result is None or result["within"]
"""
from __future__ import annotations

import dataclasses
from typing import Any

from hvd_vs_ddp.backends.base import Backend
from hvd_vs_ddp.backends.env import SINGLE
from hvd_vs_ddp.backends.local import SingleBackend
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.harness.knobs import KnobSet, loss_deviation
from hvd_vs_ddp.workloads.loop import Trainer
from hvd_vs_ddp.workloads.spec import Workload

_REFERENCES: dict[tuple, list[float]] = {}


def reference_losses(workload: Workload, knobs: KnobSet, backend: Backend,
                     steps: int, input_mode: str = "memory") -> list[float]:
    """`single`'s global losses on the same global batches as `backend`'s ranks (cached),
    fed in the cell's input mode (hvd_vs_ddp/workloads/feed.py: `device` rotates the first
    few global batches, which are the union of the ranks' first few)."""
    config = dataclasses.replace(knobs.train_config(steps=steps), input_mode=input_mode)
    key = (workload.name, repr(sorted(workload.hyperparameters().items())),
           workload.batch_size, backend.world_size, steps, repr(config),
           knobs.accumulation_steps, str(backend.device))
    if key not in _REFERENCES:
        options = BackendOptions(device=backend.options.device,
                                 accumulation_steps=knobs.accumulation_steps)
        with SingleBackend(options, env=SINGLE) as ref:
            ref.device = backend.device
            trainer = Trainer(workload.with_(batch_size=workload.batch_size
                                             * backend.world_size),
                              ref, config, emulate_ranks=backend.world_size)
            trainer.run(steps)
            _REFERENCES[key] = trainer.global_losses()
    return _REFERENCES[key]


def check(knobs: KnobSet, workload: Workload, backend: Backend,
          losses: list[float], input_mode: str = "memory") -> dict[str, Any] | None:
    """{"bound", "deviation", "within", "reference_losses"} for a set with a loss bound;
    None for a set that keeps the maths (the convergence suite holds those to 1e-4)."""
    if knobs.loss_bound is None or not losses:
        return None
    reference = reference_losses(workload, knobs, backend, len(losses), input_mode)
    deviation = loss_deviation(losses, reference)
    return {"bound": knobs.loss_bound, "deviation": deviation,
            "within": bool(deviation <= knobs.loss_bound), "reference_losses": reference}

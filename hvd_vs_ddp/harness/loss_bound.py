"""The loss bound of a knob set that changes the maths, checked in the throughput suite.

fp16/bf16 gradient compression, PowerSGD and Adasum train differently from the exact
average by design. After a throughput cell of such a set, `check` trains `single` on
the same global batches in this process (the convergence suite's reference: each global
batch cut into the ranks' shards, fp32, an exact average), once per workload, world size
and step count in a session, and compares the mean loss of the last half of the steps
(its relative difference: the set's deviation, knobs.loss_deviation).

The bound is derived from the workload and the run, not fixed (docs/methodology.md, "Loss
bounds of the sets that change the maths"): the same reference trained once more with its
exact average rounded to the set's probe dtype every step (fp16 for the fp16 sets, bf16
for the others: KnobSet.probe) measures how far this model, at these sizes and steps,
carries a benign rounding of its gradients into the loss (the reference's own
`sensitivity`: the largest per-step relative difference over the last half). The bound
is max(the set's fixed floor KnobSet.loss_bound, SENSITIVITY_FACTOR x sensitivity); for
Adasum, whose combination lies between the ranks' average and their sum by construction,
also the deviation of `single` summing its ranks' gradients (`envelope`).

A deviation beyond the bound is a measurement, not a failed cell: the record keeps the
deviation, the bound, the sensitivity and `within` False, the cell keeps its throughput
and the tuning report marks it and never crowns it. A deviation beyond FAULT_FACTOR x the
bound's derived part that is also past the floor (the fault line: where the floor rules,
the floor itself, as strict as the fixed bounds were) is no compression's error but a
broken reduction (a sum for the average, a dropped bucket, an average divided twice:
tests/unit/test_loss_bound_derived.py), and fails the cell (`fault` True).

    from hvd_vs_ddp.harness import loss_bound
    result = loss_bound.check(knobs, workload, backend, losses)  # None: the set keeps the maths
    assert result is None or not result["fault"]
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

from hvd_vs_ddp.backends.base import Backend
from hvd_vs_ddp.backends.env import SINGLE
from hvd_vs_ddp.backends.local import SingleBackend
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.harness.knobs import (
    FAULT_FACTOR,
    SENSITIVITY_FACTOR,
    KnobSet,
    loss_deviation,
    loss_sensitivity,
)
from hvd_vs_ddp.workloads.loop import Trainer
from hvd_vs_ddp.workloads.spec import Workload

_REFERENCES: dict[tuple, list[float]] = {}
PROBES = {"fp16": torch.float16, "bf16": torch.bfloat16}
OnGrads = Callable[[int, torch.nn.Module], None]


def each_gradient(change: Callable[[torch.Tensor], Any]) -> OnGrads:
    """A gradient hook (Trainer's on_grads) that changes every (final, averaged) gradient
    in place before the optimizer's step."""
    def on_grads(step: int, model: torch.nn.Module) -> None:
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    change(p.grad)
    return on_grads


def round_gradients(probe: str) -> OnGrads:
    """Every gradient rounded to `probe`'s dtype and back: one benign rounding per step,
    the sensitivity's perturbation."""
    dtype = PROBES[probe]
    return each_gradient(lambda g: g.copy_(g.to(dtype).to(g.dtype)))


def scaled_gradients(factor: float) -> OnGrads:
    """Every gradient times `factor`: with the world size, the average turned into the
    sum of the ranks' gradients (the far end of Adasum's range)."""
    return each_gradient(lambda g: g.mul_(factor))


def single_losses(workload: Workload, knobs: KnobSet, world_size: int,
                  device: torch.device | str, steps: int, input_mode: str = "memory",
                  on_grads: OnGrads | None = None, cache: str | None = None) -> list[float]:
    """`single`'s global losses on the same global batches as `world_size` ranks, fed in
    the cell's input mode (hvd_vs_ddp/workloads/feed.py: `device` rotates the first few
    global batches, which are the union of the ranks' first few); `on_grads` sees (and may
    change) the averaged gradients before each step. Cached under `cache` when named."""
    device = torch.device(device)
    config = dataclasses.replace(knobs.train_config(steps=steps), input_mode=input_mode)
    key = (workload.name, repr(sorted(workload.hyperparameters().items())),
           workload.batch_size, world_size, steps, repr(config),
           knobs.accumulation_steps, str(device), cache)
    if cache is not None and key in _REFERENCES:
        return _REFERENCES[key]
    options = BackendOptions(device="cpu" if device.type == "cpu" else "auto",
                             accumulation_steps=knobs.accumulation_steps)
    with SingleBackend(options, env=SINGLE) as ref:
        ref.device = device
        trainer = Trainer(workload.with_(batch_size=workload.batch_size * world_size),
                          ref, config, on_grads=on_grads, emulate_ranks=world_size)
        trainer.run(steps)
        losses = trainer.global_losses()
    if cache is not None:
        _REFERENCES[key] = losses
    return losses


def reference_losses(workload: Workload, knobs: KnobSet, backend: Backend,
                     steps: int, input_mode: str = "memory") -> list[float]:
    """`single`'s global losses on the same global batches as `backend`'s ranks (cached)."""
    return single_losses(workload, knobs, backend.world_size, backend.device, steps,
                         input_mode, cache="exact")


def bounds(floor: float, derived: float) -> dict[str, float]:
    """The bound, max(floor, derived), and the fault line, max(floor, FAULT_FACTOR x
    derived), from the set's floor and the derived part (SENSITIVITY_FACTOR x the
    sensitivity, or Adasum's envelope where larger): where the floor rules (small models)
    the fault line is the floor itself, as strict as the fixed bounds were."""
    return {"bound": max(floor, derived), "fault_line": max(floor, FAULT_FACTOR * derived)}


def derive(workload: Workload, knobs: KnobSet, world_size: int, device: torch.device | str,
           steps: int, input_mode: str = "memory") -> dict[str, Any]:
    """The set's bound on this workload and run: {"bound", "floor", "sensitivity",
    "probe", "factor", "fault_line", "reference_losses", "probe_losses"}, and for Adasum
    "envelope": the same statistic between single summing its ranks' gradients and single
    averaging them. Adasum combines the ranks' gradients into something between their
    average (parallel gradients) and their sum (orthogonal ones) by construction, so its
    bound reaches the sum's deviation on this workload; a sum for its average is then no
    fault a loss can show, and its fault line lies beyond the sum."""
    probe = knobs.probe
    if knobs.loss_bound is None or probe is None:
        raise ValueError(f"knob set {knobs.name} keeps the maths: it has no loss bound")
    reference = single_losses(workload, knobs, world_size, device, steps, input_mode,
                              cache="exact")
    probed = single_losses(workload, knobs, world_size, device, steps, input_mode,
                           on_grads=round_gradients(probe), cache=probe)
    sensitivity = loss_sensitivity(probed, reference)
    derived = SENSITIVITY_FACTOR * sensitivity
    out: dict[str, Any] = {"floor": knobs.loss_bound, "sensitivity": sensitivity,
                           "probe": probe, "factor": SENSITIVITY_FACTOR}
    if knobs.adasum and world_size > 1:
        summed = single_losses(workload, knobs, world_size, device, steps, input_mode,
                               on_grads=scaled_gradients(world_size), cache="sum")
        out["envelope"] = loss_sensitivity(summed, reference)
        derived = max(derived, out["envelope"])
    return {**bounds(knobs.loss_bound, derived), **out,
            "reference_losses": reference, "probe_losses": probed}


def judge(deviation: float, derived: dict[str, Any]) -> dict[str, Any]:
    """The check's verdict on one deviation: within the bound, beyond it (a measurement,
    marked), or beyond the fault line (a broken reduction: the cell fails)."""
    return {**derived, "deviation": deviation,
            "within": bool(deviation <= derived["bound"]),
            "fault": bool(deviation > derived["fault_line"])}


def check(knobs: KnobSet, workload: Workload, backend: Backend,
          losses: list[float], input_mode: str = "memory") -> dict[str, Any] | None:
    """{"bound", "floor", "sensitivity", "probe", "factor", "fault_line", "deviation",
    "within", "fault", "reference_losses", "probe_losses"} for a set with a loss bound;
    None for a set that keeps the maths (the convergence suite holds those to 1e-4)."""
    if knobs.loss_bound is None or not losses:
        return None
    derived = derive(workload, knobs, backend.world_size, backend.device, len(losses),
                     input_mode)
    return judge(loss_deviation(losses, derived["reference_losses"]), derived)


def describe(result: dict[str, Any]) -> str:
    """One line: the deviation against its bound, what the bound came from, and whether it
    is past the fault line."""
    text = (f"mean loss of the last half {result['deviation']:.3g} (relative) from "
            f"single's, {'within' if result['within'] else 'beyond'} the set's bound "
            f"{result['bound']:.3g} (the larger of its floor {result['floor']:g} and "
            f"{result['factor']:g} x the reference's own {result['probe']} sensitivity "
            f"{result['sensitivity']:.3g}"
            + (f", and Adasum's envelope: single summing its ranks' gradients "
               f"{result['envelope']:.3g})" if result.get("envelope") is not None else ")"))
    if result.get("fault"):
        text += (f" and beyond its fault line {result['fault_line']:.3g} (the larger of the "
                 f"floor and {FAULT_FACTOR:g} x the derived part): a broken reduction, not "
                 "the compression's error")
    return text

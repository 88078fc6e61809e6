"""A workload judged in the parent, before any rank starts: built, not trained.

`check(name, params, world_size)` resolves the workload (hvd_vs_ddp/workloads/external.py),
calls its factory with the parameters (each already checked against its declaration),
builds its model on torch's meta device (shapes only: no memory, no arithmetic), takes
one sample of its data set, and runs one forward pass and the loss on a meta batch of
the per-rank batch size (a small model, SMALL_STEP, takes that step on the CPU instead,
on zeros: milliseconds, where the meta device's first use costs a second of imports).
A model the meta device cannot build or run (one that reads tensor values: RegNet's
builder, transformers' attention masks) is built on the CPU and runs that step on a
batch of zeros instead, as a rank would.
Whatever would make every cell fail later is one InputError line now:

- the spec does not import, names no function, or the factory raises or returns no
  Workload (external.py, registry.get);
- the model cannot be built, is not an nn.Module or has no trainable parameters;
- the data set is not a map-style data set of (input, target) pairs, or gives each of
  the largest world size's ranks less than one batch;
- the model refuses its input (a shape mismatch, an image too small for the
  architecture) or the loss is not one number.

    from hvd_vs_ddp.workloads.check import check
    check("torchvision:vit_b_16", {"image_size": 30}, world_size=2)   # InputError
    python -m hvd_vs_ddp.workloads.check resnet50 gpt tests/external/bench_workload.py:make_workload
"""
from __future__ import annotations

import sys
import warnings
from typing import Any

from hvd_vs_ddp.common.errors import InputError

_done: set[tuple] = set()  # (spec, params, world size) already judged in this process


class WorkloadCheckError(InputError):
    pass


def check(name: str, params: dict[str, Any] | None = None, world_size: int = 1) -> None:
    from hvd_vs_ddp.workloads import registry

    params = dict(params or {})
    key = (registry.canonical(name), tuple(sorted((k, repr(v)) for k, v in params.items())),
           world_size)
    if key in _done:
        return
    with warnings.catch_warnings():  # one line on refusal: a builder's warnings are the
        warnings.simplefilter("ignore")  # ranks' to show, in the cells' logs
        _check(name, key, params, world_size)
    _done.add(key)


def _check(name: str, key: tuple, params: dict[str, Any], world_size: int) -> None:
    from hvd_vs_ddp.workloads import registry

    workload = registry.get(name, **params)
    spec = repr(key[0]) + (f" with {', '.join(f'{k}={v}' for k, v in params.items())}"
                           if params else "")  # as errors name it
    model = _model(spec, workload)
    x, y = _batch(spec, workload, world_size)
    if _on_meta(model) and _elements(model, x) <= SMALL_STEP:
        model = _cpu_model(spec, workload)
    _forward(spec, workload, model, x, y)


def _fail(spec: str, why: str) -> WorkloadCheckError:
    """"workload 'SPEC': why", or "workload 'SPEC' with k=v: why" (spec as check() names it)."""
    return WorkloadCheckError(f"workload {spec}: {why}")


def _first(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _model(spec: str, workload) -> Any:
    import torch
    from torch import nn

    try:
        with torch.device("meta"):
            model = workload.build_model(False)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user's builder may raise anything
        if "meta" not in str(exc):
            raise _fail(spec, f"its model cannot be built: {_first(exc)}") from None
        model = _cpu_model(spec, workload)  # a builder that reads tensor values (RegNet)
    if not isinstance(model, nn.Module):
        raise _fail(spec, f"build_model returned {type(model).__name__}, expected a "
                          "torch.nn.Module")
    if not any(p.requires_grad for p in model.parameters()):
        raise _fail(spec, "its model has no trainable parameters: there is nothing for "
                          "DDP or Horovod to synchronise")
    return model


def _cpu_model(spec: str, workload) -> Any:
    """The real model on the CPU, where the meta device will not do."""
    try:
        return workload.build_model(False)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user's builder may raise anything
        raise _fail(spec, f"its model cannot be built: {_first(exc)}") from None


def _on_meta(model) -> bool:
    return next(model.parameters()).device.type == "meta"


def _batch(spec: str, workload, world_size: int):
    import torch

    try:
        dataset = workload.build_dataset(workload.seed)
        size = len(dataset)
        sample = dataset[0] if size else None
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        raise _fail(spec, f"its data set cannot be built or indexed ({_first(exc)}); "
                          "expected a map-style Dataset of (input, target)") from None
    per_rank = size // max(world_size, 1)
    if per_rank < workload.batch_size:
        raise _fail(spec, f"its data set of {size} samples gives each of {world_size} "
                          f"rank(s) {per_rank} samples, fewer than one batch of "
                          f"{workload.batch_size}; give more samples or a smaller "
                          "batch_size")
    if not isinstance(sample, (tuple, list)) or len(sample) != 2:
        raise _fail(spec, f"its data set's samples are {type(sample).__name__}, expected "
                          "(input, target) pairs")
    try:
        x, y = (torch.as_tensor(v) for v in sample)
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        raise _fail(spec, f"its samples are not tensors ({_first(exc)})") from None
    batch = workload.batch_size
    return (torch.empty((batch, *x.shape), dtype=x.dtype, device="meta"),
            torch.empty((batch, *y.shape), dtype=y.dtype, device="meta"))


# A model this small (parameters plus one batch's input elements) takes its check step on
# the CPU, in milliseconds, with real arithmetic: the meta device's first forward costs
# about a second of imports in the parent (its decompositions load torch._dynamo), paid
# by every `hvd-vs-ddp run` before its first cell. Larger models stay on meta.
SMALL_STEP = 4_000_000


def _elements(model, x) -> int:
    return sum(p.numel() for p in model.parameters()) + x.numel()


def _forward(spec: str, workload, model, x, y) -> None:
    import torch

    meta = _on_meta(model)
    if not meta:
        x, y = (torch.zeros(t.shape, dtype=t.dtype) for t in (x, y))
    try:
        model.train()
        loss = workload.loss(model(x), y)
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        if meta and "meta" in str(exc):
            # a forward that reads values (.item(), data-dependent shapes): the real
            # model on the CPU, one step on a batch of zeros, as a rank would do
            return _forward(spec, workload, _cpu_model(spec, workload), x, y)
        raise _fail(spec, f"one step on a batch of {workload.batch_size} x "
                          f"{tuple(x.shape[1:])} {str(x.dtype).removeprefix('torch.')} "
                          f"fails: {_first(exc)}") from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise _fail(spec, f"its loss returned {type(loss).__name__}"
                          f"{tuple(loss.shape) if isinstance(loss, torch.Tensor) else ''}, "
                          "expected one number (a scalar tensor)")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        check(arg)
        print(f"{arg}: builds, and one step runs on the meta device")

"""A model's gradient layout: every gradient's size and when backward makes it ready.

The model is built on torch's meta device (shapes only: no memory, no arithmetic), one
step of forward and backward runs under torch's FlopCounterMode, and a hook on every
parameter notes the backward FLOPs done when its gradient was accumulated. A
gradient's ready time is that fraction of the step's backward FLOPs: backward
compute is taken to be proportional to FLOPs, so layers' time shares follow their
arithmetic. Where DDP's own bucket sizes were recorded in the run, the schedule
closes buckets where DDP did (hvd_vs_ddp/projection/schedule.py).

Models: any workload (a built-in name or a spec: `module:function`, `path/to/file.py:
function`, `torchvision:<model>`, `transformers:<model type>`, resolved by
hvd_vs_ddp/workloads/external.py, with the sizes a run recorded), and for a published
single-device figure (`--model`) torchvision's image classifiers as papers name them
('ResNet-50', 'InceptionV3') at their ImageNet input size and published transformers
(BERT, GPT-2: hvd_vs_ddp/projection/architectures.py).

    python -m hvd_vs_ddp.projection.layout resnet50 --batch-size 32     # sizes, FLOPs, ready times
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import Any

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.links.rates import gradient_bytes
from hvd_vs_ddp.projection.schedule import Grad

# torchvision classifiers a published figure may name, with their input size (others of
# torchvision's are found too, at 224)
TORCHVISION = {"resnet18": 224, "resnet34": 224, "resnet50": 224, "resnet101": 224,
               "resnet152": 224, "resnext50_32x4d": 224, "resnext101_32x8d": 224,
               "wide_resnet50_2": 224, "vgg16": 224, "vgg19": 224, "inception_v3": 299,
               "densenet121": 224, "mobilenet_v2": 224, "efficientnet_b0": 224,
               "vit_b_16": 224, "alexnet": 224}


class LayoutError(InputError):
    pass


@dataclass(frozen=True)
class Layout:
    model: str
    grads: list[Grad]         # in the order backward makes them ready
    forward_flops: float      # per rank per step
    backward_flops: float
    source: str               # how it was derived

    @property
    def grad_bytes(self) -> int:
        return sum(g.bytes for g in self.grads)

    @property
    def backward_share(self) -> float:
        """Backward's share of a step's compute time: two thirds (backward computes the
        gradients of inputs and of weights, twice forward's arithmetic). The counter's
        own total is not used for it: torch's FlopCounterMode counts grouped
        convolutions' backward without their groups (ResNeXt: 3.6x forward); the
        counter only orders the gradients inside backward."""
        return 2 / 3


def _trace(model, inputs, loss_fn, name: str, source: str) -> Layout:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise LayoutError(f"model {name!r} has no trainable parameters: nothing to project")
    counter = FlopCounterMode(display=False)
    ready: dict[int, float] = {}

    def note(i: int):
        def hook(_param) -> None:
            ready.setdefault(i, counter.get_total_flops())
        return hook

    hooks = [p.register_post_accumulate_grad_hook(note(i)) for i, p in enumerate(params)]
    try:
        with counter:
            out = model(inputs[0]) if len(inputs) == 1 else model(*inputs[:-1])
            if isinstance(out, dict):  # torchvision segmentation: {"out": ...}
                out = out["out"]
            if hasattr(out, "logits"):  # torchvision inception in train mode
                out = out.logits
            loss = loss_fn(out, inputs[-1]) if loss_fn else out.float().sum()
            forward = counter.get_total_flops()
            loss.backward()
            total = counter.get_total_flops()
    except Exception as exc:  # a model the meta device cannot trace
        raise LayoutError(f"cannot analyse model {name!r} on torch's meta device: "
                          f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
    finally:
        for h in hooks:
            h.remove()
    backward = max(total - forward, 1.0)
    grads = [Grad(bytes=p.numel() * p.element_size(),
                  ready=min(1.0, max(0.0, (ready.get(i, total) - forward) / backward)))
             for i, p in enumerate(params)]
    grads.sort(key=lambda g: g.ready)
    del torch
    return Layout(name, grads, float(forward), float(backward), source)


def _squashed(name: str) -> str:
    """A model's name with case and punctuation gone ('ViT-B/16' -> 'vitb16'), and
    ResNet's 'v1.5' (torchvision's ResNets are v1.5: stride 2 in the 3x3 convolution,
    the same parameters) dropped."""
    plain = re.sub(r"[-_\s]*v1\.5$", "", name.strip().lower())
    return re.sub(r"[^a-z0-9]", "", plain)


def _all_torchvision() -> list[str]:
    """Every image classifier the installed torchvision builds (ResNets to ViTs)."""
    import torchvision

    return list(torchvision.models.list_models(module=torchvision.models))


def torchvision_name(name: str) -> str | None:
    """A torchvision classifier as papers write it: 'ResNet-50', 'VGG16', 'Inception-v3',
    'InceptionV3', 'MobileNetV2', 'ResNeXt-50 32x4d', 'Wide ResNet-50-2', 'ViT-L/16',
    'ResNet-50 v1.5' (case, punctuation and spaces aside); None if none, or if the name
    could be two of them. The common ones are known without importing torchvision; any
    other classifier of the installed torchvision is looked up there."""
    key, exact = _squashed(name), name.strip().lower()
    for names in (TORCHVISION, None):
        try:
            known = list(names) if names is not None else _all_torchvision()
        except ImportError:
            return None
        if exact in known:
            return exact
        hits = {n for n in known if _squashed(n) == key}
        if len(hits) == 1:
            return hits.pop()
    return None


def torchvision_layout(name: str, batch_size: int) -> Layout:
    import torch
    import torchvision

    found = torchvision_name(name)
    if found is None:
        from hvd_vs_ddp.projection.architectures import ARCHS

        key = _squashed(name)
        could = sorted(n for n in _all_torchvision() if len(key) >= 4
                       and _squashed(n).startswith(key))
        if len(could) > 1:
            raise LayoutError(f"model {name!r} could be any of {', '.join(could)}: name one")

        raise LayoutError(f"cannot analyse model {name!r}: not a workload of this project, "
                          f"a torchvision classifier ({', '.join(TORCHVISION)}, or any of "
                          "torchvision.models.list_models()) nor a published transformer "
                          f"({', '.join(ARCHS)})")
    name = found
    size = TORCHVISION.get(name, 224)  # the input size only shapes the traced FLOPs
    kwargs = ({"aux_logits": False, "init_weights": False}
              if name in ("inception_v3", "googlenet") else {})
    build = getattr(torchvision.models, name)
    try:
        with torch.device("meta"):
            model = build(**kwargs)
    except Exception:  # noqa: BLE001 - RegNet computes its widths from tensors' values
        try:
            model = build(**kwargs).to("meta")  # built on the CPU (seconds), then shapes only
        except Exception as exc:  # noqa: BLE001 - any failure is one line
            raise LayoutError(f"cannot build model {name!r}: {type(exc).__name__}: "
                              f"{exc}".splitlines()[0]) from None
    with torch.device("meta"):
        x = torch.empty(batch_size, 3, size, size)
        y = torch.zeros(batch_size, dtype=torch.long)
    return _trace(model, (x, y), torch.nn.functional.cross_entropy, name,
                  f"torchvision {name}, {size}x{size} input, batch {batch_size}, "
                  "traced on the meta device")


def _workload(name: str, params: dict[str, Any], batch_size: int):
    """Workload `name` with a run's recorded sizes, and the keyword arguments it took."""
    from hvd_vs_ddp.workloads import registry

    try:
        accepted = set(registry.parameters(name))
        kwargs = {k: v for k, v in params.items() if k in accepted and k != "batch_size"}
        return registry.get(name, **kwargs, **({"batch_size": batch_size}
                                               if "batch_size" in accepted else {})), kwargs
    except InputError as exc:
        raise LayoutError(f"cannot analyse workload {name!r}: {exc}") from None


def workload_layout(name: str, params: dict[str, Any], batch_size: int) -> Layout:
    """The layout of workload `name` (a name or a spec) built with a run's recorded sizes."""
    import torch

    wl, kwargs = _workload(name, params, batch_size)
    torch.manual_seed(wl.seed)
    data: Any = wl.build_dataset(wl.seed)  # a map-style dataset: len and []
    samples = [data[i % len(data)] for i in range(batch_size)]
    x = torch.stack([torch.as_tensor(s[0]) for s in samples]).to("meta")
    y = torch.stack([torch.as_tensor(s[1]) for s in samples]).to("meta")
    with torch.device("meta"):
        model = wl.build_model(False)
    return _trace(model, (x, y), wl.loss, name,
                  f"workload {name} ({', '.join(f'{k}={v}' for k, v in sorted(kwargs.items()))}), "
                  f"batch {batch_size}, traced on the meta device")


def workload_grad_bytes(name: str, params: dict[str, Any], batch_size: int) -> int:
    """The bytes of workload `name`'s trainable parameters' gradients (its model built on
    the meta device, nothing traced): what an allreduce of them carries."""
    import torch

    wl, _ = _workload(name, params, batch_size)
    with torch.device("meta"):
        return gradient_bytes(wl.build_model(False))


def architecture_layout(name: str, batch_size: int) -> Layout:
    """A published transformer by name (hvd_vs_ddp/projection/architectures.py)."""
    import torch

    from hvd_vs_ddp.projection import architectures

    found = architectures.find(name)
    if found is None:
        raise LayoutError(f"cannot analyse model {name!r}: not a known architecture "
                          f"({', '.join(architectures.ARCHS)})")
    arch, seq = found
    with torch.device("meta"):
        model = architectures.build(arch)
        ids = torch.zeros(batch_size, seq, dtype=torch.long)
    return _trace(model, (ids,), None, name,
                  f"{arch.source}; sequence {seq}, batch {batch_size} sequences, traced on "
                  "the meta device")


def model_layout(name: str, batch_size: int) -> Layout:
    """`--model NAME` of a published figure: a torchvision classifier by bare name
    (ImageNet input) first, then a published transformer (BERT, GPT-2), else a workload
    (a built-in name or a spec) at its default sizes."""
    from hvd_vs_ddp.projection import architectures
    from hvd_vs_ddp.workloads import external, registry

    if torchvision_name(name) is not None:
        return torchvision_layout(name, batch_size)
    if architectures.find(name) is not None:
        return architecture_layout(name, batch_size)
    if not (name in registry.names() or external.is_spec(name)
            or name in external.entry_points()):
        return torchvision_layout(name, batch_size)  # its error lists what is known
    return workload_layout(name, {}, batch_size)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.projection.layout", description=__doc__)
    ap.add_argument("model")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args(argv)
    lay = model_layout(args.model, args.batch_size)
    print(f"{lay.model}: {len(lay.grads)} gradients, {lay.grad_bytes / 2**20:.1f} MiB, "
          f"forward {lay.forward_flops / 1e9:.1f} GFLOP, backward "
          f"{lay.backward_flops / 1e9:.1f} GFLOP ({lay.source})")
    for q in (0.25, 0.5, 0.75, 1.0):
        done = sum(g.bytes for g in lay.grads if g.ready <= q) / max(lay.grad_bytes, 1)
        print(f"  by {q:.0%} of backward: {done:.0%} of gradient bytes ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())

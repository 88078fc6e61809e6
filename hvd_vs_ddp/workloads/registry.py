"""Workload names -> builders. Sizes are parameters so that a CPU run stays short.

    from hvd_vs_ddp.workloads import registry
    registry.get("resnet50", batch_size=4, image_size=64)
    python -m hvd_vs_ddp.workloads.registry        # lists the workloads and their defaults
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from torch import nn

from hvd_vs_ddp.common.errors import InputError, UnknownName
from hvd_vs_ddp.workloads import data, models
from hvd_vs_ddp.workloads.spec import Workload

_cross_entropy = nn.CrossEntropyLoss()


def _lm_loss(logits, target):
    return _cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def mlp(batch_size: int = 32, features: int = 64, hidden: int = 256, depth: int = 3,
        classes: int = 10, samples: int = 4096, lr: float = 0.05, seed: int = 0) -> Workload:
    """MLP on synthetic, learnable data: the smallest full training step."""
    return Workload(
        name="mlp",
        build_model=lambda ckpt: models.MLP(features, hidden, depth, classes, ckpt),
        build_dataset=lambda s: data.synthetic_classification(samples, features, classes, s),
        loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"features": features, "hidden": hidden, "depth": depth, "classes": classes,
                "samples": samples})


def digits(batch_size: int = 16, hidden: int = 128, depth: int = 2, lr: float = 0.05,
           seed: int = 0) -> Workload:
    """MLP on scikit-learn's real handwritten digits, with a held-out split."""
    return Workload(
        name="digits",
        build_model=lambda ckpt: models.MLP(64, hidden, depth, 10, ckpt),
        build_dataset=lambda s: data.digits(train=True),
        build_eval_dataset=lambda s: data.digits(train=False),
        loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"hidden": hidden, "depth": depth, "data": "sklearn digits 80/20"})


def resnet50(batch_size: int = 8, image_size: int = 64, classes: int = 100,
             samples: int = 256, lr: float = 0.01, seed: int = 0,
             data_dir: str | None = None) -> Workload:
    """torchvision ResNet-50 (Horovod's synthetic benchmark model)."""
    if data_dir:
        build = lambda s: data.image_folder(data_dir, image_size)  # noqa: E731
    else:
        build = lambda s: data.synthetic_images(samples, 3, image_size, classes, s)  # noqa: E731
    return Workload(
        name="resnet50", build_model=lambda ckpt: models.resnet50(classes, ckpt),
        build_dataset=build, loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"image_size": image_size, "classes": classes, "data_dir": data_dir},
        supports_channels_last=True)


def deeplabv3(batch_size: int = 2, image_size: int = 64, classes: int = 21,
              samples: int = 64, lr: float = 0.01, seed: int = 0) -> Workload:
    """torchvision DeepLabV3-ResNet101 (the published DDP-vs-DataParallel model)."""
    return Workload(
        name="deeplabv3", build_model=lambda ckpt: models.deeplabv3(classes, ckpt),
        build_dataset=lambda s: data.synthetic_images(samples, 3, image_size, classes, s,
                                                      dense=True),
        loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"image_size": image_size, "classes": classes}, supports_channels_last=True)


def gpt(batch_size: int = 8, seq_len: int = 64, vocab: int = 256, dim: int = 128,
        layers: int = 4, heads: int = 4, samples: int = 2048, lr: float = 1e-3,
        seed: int = 0) -> Workload:
    """A small GPT-style decoder-only language model on structured token data."""
    return Workload(
        name="gpt",
        build_model=lambda ckpt: models.TinyGPT(vocab, seq_len, dim, layers, heads, ckpt),
        build_dataset=lambda s: data.synthetic_tokens(samples, seq_len, vocab, s),
        loss=_lm_loss, batch_size=batch_size, optimizer="adamw", lr=lr, seed=seed,
        params={"seq_len": seq_len, "vocab": vocab, "dim": dim, "layers": layers,
                "heads": heads})


def gpt_wide(batch_size: int = 4, seq_len: int = 64, vocab: int = 256, dim: int = 512,
             layers: int = 4, heads: int = 8, samples: int = 1024, lr: float = 1e-3,
             seed: int = 0) -> Workload:
    """A wider GPT (~12.7M parameters, ~50 MB fp32, AdamW state twice that): large
    enough that sharding parameters or optimizer state shows at 2-4 CPU ranks."""
    return gpt(batch_size, seq_len, vocab, dim, layers, heads, samples, lr, seed).with_(
        name="gpt-wide")


_WORKLOADS: dict[str, Callable[..., Workload]] = {
    "mlp": mlp, "digits": digits, "resnet50": resnet50, "deeplabv3": deeplabv3, "gpt": gpt,
    "gpt-wide": gpt_wide,
}


def names() -> list[str]:
    return list(_WORKLOADS)


def parameters(name: str) -> list[str]:
    """The parameters workload `name` takes (UnknownName for an unknown workload)."""
    if name not in _WORKLOADS:
        raise UnknownName("workload", name, _WORKLOADS)
    return list(inspect.signature(_WORKLOADS[name]).parameters)


def get(name: str, **params: Any) -> Workload:
    try:
        factory = _WORKLOADS[name]
    except KeyError:
        raise UnknownName("workload", name, _WORKLOADS) from None
    accepted = inspect.signature(factory).parameters
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise InputError(f"workload {name!r} takes no parameter(s) {', '.join(unknown)}; "
                         f"it takes {', '.join(accepted)}")
    return factory(**params)


if __name__ == "__main__":
    for n, f in _WORKLOADS.items():
        defaults = {k: p.default for k, p in inspect.signature(f).parameters.items()}
        print(f"{n:10s} {(f.__doc__ or '').strip().splitlines()[0]}\n{'':10s} {defaults}")

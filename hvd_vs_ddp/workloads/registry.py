"""Workload names -> builders. Sizes are parameters so that a CPU run stays short.

Each factory declares its parameters with their types and ranges
(hvd_vs_ddp/workloads/params.py); `--workload-param` is judged by those declarations in
`hvd-vs-ddp run` and in the ranks alike. Besides these built-in names a workload may be
any spec hvd_vs_ddp/workloads/external.py resolves (an entry point, `module:function`,
`path/to/file.py:function`, `torchvision:<model>`, `transformers:<model type>`):
`resolve`, `parameters` and `get` take every form.

    from hvd_vs_ddp.workloads import registry
    registry.get("resnet50", batch_size=4, image_size=64)
    registry.get("torchvision:vit_b_16", image_size=32)
    python -m hvd_vs_ddp.workloads.registry        # the workloads and their parameters
"""
from __future__ import annotations

from typing import Any, Callable

from hvd_vs_ddp.common.errors import InputError, InvalidValue
from hvd_vs_ddp.workloads import external
from hvd_vs_ddp.workloads.params import Param, declare
from hvd_vs_ddp.workloads.spec import Workload

# torch, the models and the data sets are imported where a workload is built or trained,
# not here: the CLI judges names and parameters (and refuses bad ones) without torch.


def _cross_entropy(output, target):
    """torch.nn.CrossEntropyLoss() (mean over the batch), as a function."""
    from torch.nn import functional

    return functional.cross_entropy(output, target)


def _lm_loss(logits, target):
    return _cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def _check_data_dir(path: str):
    from hvd_vs_ddp.workloads import data

    return data.check_data_dir(path, "data_dir")


BATCH = Param("batch_size", int, 1, 65536, "samples per rank per step")
LR = Param("lr", float, 0, 10, "learning rate, never scaled by world size",
           above_minimum=True)
SEED = Param("seed", int, 0, 2**32 - 1, "model init, data generation and shuffling")
SAMPLES = Param("samples", int, 1, 10_000_000, "samples in the synthetic data set")
HIDDEN = Param("hidden", int, 1, 65536, "hidden width")
DEPTH = Param("depth", int, 1, 256, "hidden layers")
CLASSES = Param("classes", int, 2, 100_000, "output classes")
IMAGE_SIZE = Param("image_size", int, 8, 4096, "square input, pixels")
GPT = (BATCH, LR, SEED, SAMPLES, Param("seq_len", int, 1, 8192, "tokens per sample"),
       Param("vocab", int, 2, 1_000_000, "vocabulary size"),
       Param("dim", int, 1, 65536, "model width (a multiple of heads)"),
       Param("layers", int, 1, 256, "transformer blocks"),
       Param("heads", int, 1, 1024, "attention heads"))


@declare(BATCH, LR, SEED, SAMPLES, HIDDEN, DEPTH, CLASSES,
         Param("features", int, 1, 65536, "input features"))
def mlp(batch_size: int = 32, features: int = 64, hidden: int = 256, depth: int = 3,
        classes: int = 10, samples: int = 4096, lr: float = 0.05, seed: int = 0) -> Workload:
    """MLP on synthetic, learnable data: the smallest full training step."""
    from hvd_vs_ddp.workloads import data, models

    return Workload(
        name="mlp",
        build_model=lambda ckpt: models.MLP(features, hidden, depth, classes, ckpt),
        build_dataset=lambda s: data.synthetic_classification(samples, features, classes, s),
        loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"features": features, "hidden": hidden, "depth": depth, "classes": classes,
                "samples": samples})


@declare(BATCH, HIDDEN, DEPTH, LR, SEED)
def digits(batch_size: int = 16, hidden: int = 128, depth: int = 2, lr: float = 0.05,
           seed: int = 0) -> Workload:
    """MLP on scikit-learn's real handwritten digits, with a held-out split."""
    from hvd_vs_ddp.workloads import data, models

    return Workload(
        name="digits",
        build_model=lambda ckpt: models.MLP(64, hidden, depth, 10, ckpt),
        build_dataset=lambda s: data.digits(train=True),
        build_eval_dataset=lambda s: data.digits(train=False),
        loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"hidden": hidden, "depth": depth, "data": "sklearn digits 80/20"})


@declare(BATCH, IMAGE_SIZE, CLASSES, SAMPLES, LR, SEED,
         Param("data_dir", str, is_dir=True, nullable=True,
               help="a local ImageFolder or CIFAR-10 folder (run --data-dir)",
               validate=lambda d: str(_check_data_dir(d))))
def resnet50(batch_size: int = 8, image_size: int = 64, classes: int = 100,
             samples: int = 256, lr: float = 0.01, seed: int = 0,
             data_dir: str | None = None) -> Workload:
    """torchvision ResNet-50 (Horovod's synthetic benchmark model)."""
    from hvd_vs_ddp.workloads import data, models

    if data_dir:
        build = lambda s: data.image_folder(data_dir, image_size)  # noqa: E731
    else:
        build = lambda s: data.synthetic_images(samples, 3, image_size, classes, s)  # noqa: E731
    return Workload(
        name="resnet50", build_model=lambda ckpt: models.resnet50(classes, ckpt),
        build_dataset=build, loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"image_size": image_size, "classes": classes, "data_dir": data_dir},
        supports_channels_last=True)


@declare(BATCH, IMAGE_SIZE, CLASSES, SAMPLES, LR, SEED)
def deeplabv3(batch_size: int = 2, image_size: int = 64, classes: int = 21,
              samples: int = 64, lr: float = 0.01, seed: int = 0) -> Workload:
    """torchvision DeepLabV3-ResNet101 (the published DDP-vs-DataParallel model)."""
    from hvd_vs_ddp.workloads import data, models

    return Workload(
        name="deeplabv3", build_model=lambda ckpt: models.deeplabv3(classes, ckpt),
        build_dataset=lambda s: data.synthetic_images(samples, 3, image_size, classes, s,
                                                      dense=True),
        loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
        params={"image_size": image_size, "classes": classes}, supports_channels_last=True)


@declare(*GPT)
def gpt(batch_size: int = 8, seq_len: int = 64, vocab: int = 256, dim: int = 128,
        layers: int = 4, heads: int = 4, samples: int = 2048, lr: float = 1e-3,
        seed: int = 0) -> Workload:
    """A small GPT-style decoder-only language model on structured token data."""
    from hvd_vs_ddp.workloads import data, models

    return Workload(
        name="gpt",
        build_model=lambda ckpt: models.TinyGPT(vocab, seq_len, dim, layers, heads, ckpt),
        build_dataset=lambda s: data.synthetic_tokens(samples, seq_len, vocab, s),
        loss=_lm_loss, batch_size=batch_size, optimizer="adamw", lr=lr, seed=seed,
        params={"seq_len": seq_len, "vocab": vocab, "dim": dim, "layers": layers,
                "heads": heads})


@declare(*GPT)
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
    """The built-in workloads (external ones are resolved by spec: external.py)."""
    return list(_WORKLOADS)


def resolve(name: str) -> external.Source:
    """Any workload name or spec -> its Source (one InputError line if it cannot be)."""
    return external.resolve(name, _WORKLOADS)


def canonical(name: str) -> str:
    """The name as the ranks and the results carry it (a file's path made absolute)."""
    return resolve(name).spec


def parameters(name: str) -> dict[str, Param]:
    """The declared parameters of workload `name` (UnknownName for an unknown workload)."""
    return resolve(name).params


def get(name: str, **params: Any) -> Workload:
    """The workload `name` built with `params` (each checked against its declaration).
    The Workload's name is the canonical spec. InputError for an unknown workload or
    parameter, a value out of range, or a factory that fails or returns no Workload."""
    source = resolve(name)
    declared = source.params
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise InputError(f"workload {source.spec!r} takes no parameter(s) "
                         f"{', '.join(unknown)}; it takes {', '.join(declared)}")
    checked = {}
    for key, value in params.items():
        try:
            checked[key] = declared[key].check(value)
        except ValueError as exc:
            raise InputError(f"workload {source.spec!r}: {exc}") from None
    try:
        workload = source.factory(**checked)
    except InvalidValue as exc:  # the Workload's own check, as the factory built it
        raise InputError(f"workload {source.spec!r}: {_call(source, checked)} built a "
                         f"Workload it refuses: {_after_name(exc)}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user's factory may raise anything
        if source.builtin:
            raise  # a bug of ours: its traceback
        raise InputError(f"workload {source.spec!r}: {_call(source, checked)} raised "
                         f"{external._first(exc)}") from None
    if not isinstance(workload, Workload):
        raise InputError(f"workload {source.spec!r}: {_call(source, checked)} returned "
                         f"{type(workload).__name__}, expected a "
                         "hvd_vs_ddp.workloads.Workload (docs/own-model.md)")
    try:  # again: a factory may change its Workload after building it
        workload.validate()
        return workload if workload.name == source.spec else workload.with_(name=source.spec)
    except InvalidValue as exc:
        raise InputError(f"workload {source.spec!r}: {_call(source, checked)} returned a "
                         f"Workload it refuses: {_after_name(exc)}") from None


def _after_name(exc: Exception) -> str:
    """An InvalidValue's message without its "workload 'NAME': " prefix."""
    text = str(exc)
    return text.split(": ", 1)[1] if text.startswith("workload ") and ": " in text else text


def _call(source: external.Source, params: dict[str, Any]) -> str:
    name = getattr(source.factory, "__name__", "the factory")
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def main(argv: list[str]) -> None:
    """Print each workload (default: the built-in ones and the installed entry points)
    with its declared parameters."""
    for n in argv or [*_WORKLOADS, *external.entry_points()]:
        src = resolve(n)
        doc = (src.factory.__doc__ or "").strip().splitlines()
        print(f"{src.spec:10s} {doc[0] if doc else ''}")
        for p in src.params.values():
            print(f"{'':10s} {p.describe()}")
    print("\nor a spec: " + external.FORMS + " (docs/own-model.md)")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

"""Models by name from the libraries users already have, as workloads.

- `torchvision:<model>`: any torchvision classification model
  (`torchvision.models.list_models(module=torchvision.models)`: resnet18, vit_b_16,
  convnext_tiny, ...) or segmentation model (deeplabv3_resnet50, fcn_resnet50, ...),
  random weights (never downloaded: weights=None, weights_backbone=None), on synthetic
  images of `image_size` pixels with random labels (per pixel for segmentation).
  CPU runs stay small by default: 64 px wherever the architecture allows it (ViT gets
  the size through its builder's `image_size`; inception_v3 needs at least 75 px and
  gets 96; maxvit_t needs multiples of 224 and gets 224).
- `transformers:<model type>`: a Hugging Face model built from its config
  (`AutoConfig.for_model(<model type>)`: gpt2, llama, bert, mistral, ...) made small
  (`layers`, `hidden`, `heads`, `vocab`, `seq_len` are parameters), random weights, no
  download (HF_HUB_OFFLINE=1), as a causal LM where transformers has one for the type,
  else a masked LM; trained on structured synthetic token sequences (next token).
  transformers is not a requirement of hvd-vs-ddp: without it such a name is one line.

Each is a workload factory like the built-in ones (hvd_vs_ddp/workloads/registry.py),
with its parameters declared (hvd_vs_ddp/workloads/params.py), so `--workload-param
torchvision:vit_b_16:image_size=32` is judged up front. The model's output is reduced
to one tensor of logits (a segmentation model's {"out": ...}, a transformers
ModelOutput's .logits). These models take no activation checkpointing: the
checkpointing knob builds them unchanged (as channels_last is skipped where it does
not apply).

    python -m hvd_vs_ddp.workloads.registry torchvision:vit_b_16 transformers:gpt2
"""
from __future__ import annotations

import os
from typing import Any, Callable

from torch import nn

from hvd_vs_ddp.workloads import data
from hvd_vs_ddp.workloads.params import Param, declare
from hvd_vs_ddp.workloads.spec import Workload, WorkloadSpecError

# input sizes where 64 px does not fit the architecture (checked on the meta device)
IMAGE_SIZE = {"inception_v3": 96, "maxvit_t": 224}
DEFAULT_IMAGE_SIZE = 64
_COMMON = (Param("batch_size", int, 1, 65536, "samples per rank per step"),
           Param("samples", int, 1, 10_000_000, "synthetic samples in the data set"),
           Param("lr", float, 0, 10, "learning rate (SGD for images, AdamW for tokens)",
                 above_minimum=True),
           Param("seed", int, 0, 2**32 - 1, "model init, data and shuffling"))


class Logits(nn.Module):
    """The model with its output reduced to one tensor: dict["out"] or .logits."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        out = self.inner(x)
        if isinstance(out, dict) and "out" in out:
            return out["out"]
        return getattr(out, "logits", out)


_cross_entropy = nn.CrossEntropyLoss()


def _lm_loss(logits, target):
    return _cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def factory(zoo: str, model: str, spec: str) -> Callable[..., Workload]:
    if zoo == "torchvision":
        return _torchvision(model, spec)
    return _transformers(model, spec)


def _refuse(spec: str, why: str) -> WorkloadSpecError:
    return WorkloadSpecError(f"workload {spec!r}: {why}")


# -- torchvision ---------------------------------------------------------------
def _torchvision(model: str, spec: str) -> Callable[..., Workload]:
    import torchvision
    from torchvision.models import list_models

    classify = list_models(module=torchvision.models)
    segment = list_models(module=torchvision.models.segmentation)
    if model not in classify + segment:
        raise _refuse(spec, f"not a torchvision classification or segmentation model "
                            f"({len(classify)} and {len(segment)} of them, e.g. resnet18, "
                            "vit_b_16, convnext_tiny, deeplabv3_resnet50: "
                            "torchvision.models.list_models())")
    dense = model in segment
    size = IMAGE_SIZE.get(model, DEFAULT_IMAGE_SIZE)

    @declare(*_COMMON,
             Param("image_size", int, 8, 4096, "square input, pixels (CPU-sized default)"),
             Param("classes", int, 2, 100_000, "output classes"))
    def make(batch_size: int = 4, image_size: int = size, classes: int = 10,
             samples: int = 64, lr: float = 0.01, seed: int = 0) -> Workload:
        def build(checkpointing: bool) -> nn.Module:
            from torchvision.models import get_model

            kwargs: dict[str, Any] = {"weights": None, "num_classes": classes}
            if model.startswith("vit_"):
                kwargs["image_size"] = image_size
            elif model.startswith("maxvit"):
                kwargs["input_size"] = (image_size, image_size)
            elif model in ("inception_v3", "googlenet"):
                kwargs.update(aux_logits=False, init_weights=True)
            if dense:
                kwargs["weights_backbone"] = None
                if not model.startswith("lraspp"):
                    kwargs["aux_loss"] = False
            return Logits(get_model(model, **kwargs))

        return Workload(
            name=spec, build_model=build,
            build_dataset=lambda s: data.synthetic_images(samples, 3, image_size, classes,
                                                          s, dense=dense),
            loss=_cross_entropy, batch_size=batch_size, lr=lr, seed=seed,
            params={"image_size": image_size, "classes": classes, "samples": samples},
            supports_channels_last=True)

    make.__doc__ = f"torchvision {model} ({'segmentation' if dense else 'classification'})"
    return make


# -- transformers --------------------------------------------------------------
def _transformers(model_type: str, spec: str) -> Callable[..., Workload]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: nothing to fetch
    try:
        import transformers
    except ImportError:
        raise _refuse(spec, "the transformers package is not installed here (pip install "
                            "transformers); hvd-vs-ddp does not require it") from None
    transformers.logging.set_verbosity_error()
    try:
        transformers.AutoConfig.for_model(model_type)
    except (ValueError, KeyError):
        raise _refuse(spec, f"transformers knows no model type {model_type!r} (e.g. gpt2, "
                            "llama, bert, mistral: transformers.CONFIG_MAPPING)") from None

    @declare(*_COMMON,
             Param("seq_len", int, 1, 65536, "tokens per sample"),
             Param("vocab", int, 2, 1_000_000, "vocabulary size"),
             Param("hidden", int, 1, 65536, "hidden size"),
             Param("layers", int, 1, 1024, "transformer layers"),
             Param("heads", int, 1, 1024, "attention heads (hidden must be divisible)"))
    def make(batch_size: int = 4, seq_len: int = 32, vocab: int = 256, hidden: int = 64,
             layers: int = 2, heads: int = 2, samples: int = 256, lr: float = 1e-3,
             seed: int = 0) -> Workload:
        sizes = dict(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, num_key_value_heads=heads,
                     intermediate_size=4 * hidden, max_position_embeddings=max(seq_len, 8),
                     bos_token_id=0, eos_token_id=0, pad_token_id=0)

        def build(checkpointing: bool) -> nn.Module:
            config = transformers.AutoConfig.for_model(model_type, **sizes)
            for auto in (transformers.AutoModelForCausalLM, transformers.AutoModelForMaskedLM):
                try:
                    return Logits(auto.from_config(config))
                except ValueError:
                    continue
            raise ValueError(f"transformers has no causal or masked language model for "
                             f"{model_type!r} (an encoder-decoder or vision model?)")

        return Workload(
            name=spec, build_model=build,
            build_dataset=lambda s: data.synthetic_tokens(samples, seq_len, vocab, s),
            loss=_lm_loss, batch_size=batch_size, optimizer="adamw", lr=lr, seed=seed,
            params={"seq_len": seq_len, "vocab": vocab, "hidden": hidden, "layers": layers,
                    "heads": heads, "samples": samples})

    make.__doc__ = f"transformers {model_type} from its config, random weights"
    return make

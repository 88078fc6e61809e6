"""Model builders for the workloads, each with optional activation checkpointing.

- mlp: a plain multi-layer perceptron (no BatchNorm, no dropout, so a distributed
  run is mathematically the single-process run on the global batch);
- resnet50 and deeplabv3 (ResNet-101 backbone): torchvision's, random init;
- gpt: a small decoder-only transformer language model (pre-LayerNorm, causal).

    python -m hvd_vs_ddp.workloads.models     # prints parameter counts
"""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Checkpointed(nn.Module):
    """Recompute `inner`'s activations in backward instead of storing them."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        if self.training and torch.is_grad_enabled():
            return checkpoint(self.inner, *args, use_reentrant=False)
        return self.inner(*args)


class MLP(nn.Module):
    def __init__(self, features: int, hidden: int, depth: int, classes: int,
                 checkpointing: bool = False) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        width = features
        for _ in range(depth):
            block = nn.Sequential(nn.Linear(width, hidden), nn.ReLU())
            blocks.append(Checkpointed(block) if checkpointing else block)
            width = hidden
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


class Block(nn.Module):
    """Pre-LayerNorm transformer block with causal self-attention."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int, seq_len: int, dim: int, layers: int, heads: int,
                 checkpointing: bool = False) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, seq_len, dim))
        nn.init.normal_(self.pos, std=0.02)
        self.blocks = nn.ModuleList(
            Checkpointed(Block(dim, heads)) if checkpointing else Block(dim, heads)
            for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[:, : idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def resnet50(classes: int, checkpointing: bool = False) -> nn.Module:
    from torchvision.models import resnet50 as tv_resnet50

    model = tv_resnet50(weights=None, num_classes=classes)
    if checkpointing:
        for name in ("layer1", "layer2", "layer3", "layer4"):
            setattr(model, name, Checkpointed(getattr(model, name)))
    return model


class _SegmentationOut(nn.Module):
    """torchvision's segmentation models return {'out': ...}; the loop wants a tensor."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)["out"]


def deeplabv3(classes: int, checkpointing: bool = False) -> nn.Module:
    from torchvision.models.segmentation import deeplabv3_resnet101

    model = deeplabv3_resnet101(weights=None, weights_backbone=None, num_classes=classes,
                                aux_loss=False)
    if checkpointing:
        body = model.backbone
        for name in ("layer1", "layer2", "layer3", "layer4"):
            setattr(body, name, Checkpointed(getattr(body, name)))
    return _SegmentationOut(model)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


if __name__ == "__main__":
    for label, m in [("mlp", MLP(64, 256, 3, 10)), ("gpt", TinyGPT(256, 64, 128, 4, 4)),
                     ("resnet50", resnet50(1000)), ("deeplabv3", deeplabv3(21))]:
        print(f"{label:10s} {parameter_count(m) / 1e6:8.2f} M parameters")

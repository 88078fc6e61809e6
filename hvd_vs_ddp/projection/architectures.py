"""Published transformer architectures by name, for `hvd-vs-ddp project --model`.

Head-to-head results are often published for BERT and GPT-2, models that are neither
torchvision classifiers nor workloads of this project, and the `transformers` package is
not a dependency. This module builds them from torch.nn with the published sizes and the
parameter tensors of their reference implementations (Hugging Face's BertForPreTraining
and GPT2LMHeadModel: separate query, key and value in BERT, GPT-2's fused c_attn, the
output layer tied to the word embeddings), so that the gradients DDP and Horovod reduce
have the right count and sizes; layout.py traces them on the meta device like any model.

    bert-base, bert-large          sequence 128 (BERT's pre-training phase 1), batch in
                                   sequences; the masked-LM head over every position
                                   (as BertForPreTraining computes it) and next-sentence
    gpt2, gpt2-medium, gpt2-large, gpt2-xl   sequence 1024, batch in sequences

Names are matched without case, '_' and spaces as '-', 'GPT-2' as gpt2, a trailing
'-uncased' or '-cased' ignored ('BERT Large', 'GPT-2 Medium', 'bert-large-uncased'), and
a sequence length may follow: `bert-large@512`.

    python -m hvd_vs_ddp.projection.layout bert-large --batch-size 32
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Arch:
    family: str       # "bert" or "gpt2"
    hidden: int
    layers: int
    heads: int
    vocab: int
    positions: int
    seq: int          # default sequence length
    source: str


ARCHS = {
    "bert-base": Arch("bert", 768, 12, 12, 30522, 512, 128,
                      "Devlin et al. 2019, BERT-base: 12 layers, 768 hidden, 12 heads"),
    "bert-large": Arch("bert", 1024, 24, 16, 30522, 512, 128,
                       "Devlin et al. 2019, BERT-large: 24 layers, 1024 hidden, 16 heads"),
    "gpt2": Arch("gpt2", 768, 12, 12, 50257, 1024, 1024,
                 "Radford et al. 2019, GPT-2 (124M): 12 layers, 768 hidden"),
    "gpt2-medium": Arch("gpt2", 1024, 24, 16, 50257, 1024, 1024,
                        "GPT-2 medium (355M): 24 layers, 1024 hidden"),
    "gpt2-large": Arch("gpt2", 1280, 36, 20, 50257, 1024, 1024,
                       "GPT-2 large (774M): 36 layers, 1280 hidden"),
    "gpt2-xl": Arch("gpt2", 1600, 48, 25, 50257, 1024, 1024,
                    "GPT-2 XL (1.5B): 48 layers, 1600 hidden"),
}


def find(name: str) -> tuple[Arch, int] | None:
    """The architecture and sequence length a name stands for, or None."""
    m = re.fullmatch(r"(.+?)(?:@(\d+))?", re.sub(r"[\s_]+", "-", name.strip().lower()))
    if not m:
        return None
    key = re.sub(r"-?\((un)?cased\)$|-(un)?cased$", "", m.group(1))
    key = re.sub(r"^gpt-2(?=-|$)", "gpt2", key)  # 'GPT-2 Medium' -> gpt2-medium
    arch = ARCHS.get(key)
    if arch is None:
        return None
    seq = int(m.group(2)) if m.group(2) else arch.seq
    return (arch, seq) if 1 <= seq <= arch.positions else None


def build(arch: Arch) -> Any:
    """The model (on the current default device: layout.py uses meta)."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    h, heads = arch.hidden, arch.heads

    def attend(q, k, v):
        b, s, _ = q.shape
        q, k, v = (t.view(b, s, heads, h // heads).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // heads)
        return torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(b, s, h)

    class BertLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(h, h) for _ in range(3))
            self.attn_out, self.attn_norm = nn.Linear(h, h), nn.LayerNorm(h)
            self.intermediate, self.output = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
            self.out_norm = nn.LayerNorm(h)

        def forward(self, x):
            a = attend(self.query(x), self.key(x), self.value(x))
            x = self.attn_norm(x + self.attn_out(a))
            return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(arch.vocab, h)
            self.position = nn.Embedding(arch.positions, h)
            self.token_type = nn.Embedding(2, h)
            self.embed_norm = nn.LayerNorm(h)
            self.layers = nn.ModuleList(BertLayer() for _ in range(arch.layers))
            self.pooler = nn.Linear(h, h)
            self.transform, self.transform_norm = nn.Linear(h, h), nn.LayerNorm(h)
            self.decoder_bias = nn.Parameter(torch.zeros(arch.vocab))  # decoder: tied
            self.next_sentence = nn.Linear(h, 2)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.embed_norm(self.word(ids) + self.position(pos)
                                + self.token_type(torch.zeros_like(ids)))
            for layer in self.layers:
                x = layer(x)
            mlm = F.linear(self.transform_norm(F.gelu(self.transform(x))), self.word.weight,
                           self.decoder_bias)
            nsp = self.next_sentence(torch.tanh(self.pooler(x[:, 0])))
            return mlm.float().logsumexp(-1).mean() + nsp.float().logsumexp(-1).mean()

    class Gpt2Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.c_fc, self.mlp_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

        def forward(self, x):
            q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=-1)
            x = x + self.c_proj(attend(q, k, v))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class Gpt2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(arch.vocab, h), nn.Embedding(arch.positions, h)
            self.blocks = nn.ModuleList(Gpt2Block() for _ in range(arch.layers))
            self.ln_f = nn.LayerNorm(h)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            for block in self.blocks:
                x = block(x)
            return F.linear(self.ln_f(x), self.wte.weight).float().logsumexp(-1).mean()

    return Bert() if arch.family == "bert" else Gpt2()

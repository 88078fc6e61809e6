"""A small GAN with two optimizers and toggled gradient accumulation.

Generator and discriminator (small MLPs on 2-D points from a ring of Gaussians), each
with its own optimizer (SGD with momentum, explicit and identical for every backend).
One training step is Lightning's toggled schedule: the discriminator accumulates over
k micro-batches (fakes drawn without a graph), then the generator accumulates over k
micro-batches with the discriminator toggled off (its parameters frozen, and under
DDP its forward in no_sync, so it neither accumulates nor communicates). Each model
communicates only on its k-th backward pass: DDP's `no_sync` per model through
`backend.accumulate`, Horovod's two DistributedOptimizers with backward_passes_per_step
= k (BackendOptions.accumulation_steps). This is a second loop beside hvd_vs_ddp/workloads/loop.py
because the one loop trains one model with one optimizer.

    from hvd_vs_ddp.backends import registry
    from hvd_vs_ddp.workloads.gan import GANConfig, train_gan
    with registry.create("single") as be: print(train_gan(be, GANConfig(steps=5)))
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hvd_vs_ddp.backends.base import Backend
from hvd_vs_ddp.workloads.data import ShardedBatches
from hvd_vs_ddp.workloads.loop import init_seed, seed_everything


@dataclass(frozen=True)
class GANConfig:
    """steps: optimizer steps of each model; accumulation: micro-batches per step (k);
    batch_size: samples per rank per micro-batch; lr/momentum: both SGD optimizers."""

    steps: int = 10
    accumulation: int = 2
    batch_size: int = 16
    noise: int = 8
    hidden: int = 64
    samples: int = 2048
    lr: float = 0.02
    momentum: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "accumulation", "batch_size", "noise", "hidden", "samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"GANConfig.{name} must be >= 1, got {getattr(self, name)}")

    def as_dict(self) -> dict:
        return asdict(self)


class Generator(nn.Module):
    def __init__(self, noise: int, hidden: int) -> None:
        super().__init__()
        # distinct parameter names from the discriminator's (Horovod names tensors by them)
        self.gen = nn.Sequential(nn.Linear(noise, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, z):
        return self.gen(z)


class Discriminator(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.disc = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.disc(x)


def ring_dataset(samples: int, noise: int, seed: int) -> TensorDataset:
    """(real point on a ring of 8 Gaussians, the noise vector paired with it)."""
    g = torch.Generator().manual_seed(seed)
    angle = torch.randint(0, 8, (samples,), generator=g).float() * (2 * math.pi / 8)
    real = torch.stack([angle.cos(), angle.sin()], dim=1) * 2
    real = real + 0.05 * torch.randn(samples, 2, generator=g)
    return TensorDataset(real, torch.randn(samples, noise, generator=g))


@contextlib.contextmanager
def frozen(backend: Backend, model: nn.Module):
    """The other model toggled off: no gradients kept, no gradient communication."""
    params = list(model.parameters())
    before = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(False)
    try:
        with backend.accumulate(model, last=False):  # DDP: no_sync (no reducer armed)
            yield
    finally:
        for p, flag in zip(params, before):
            p.requires_grad_(flag)


def train_gan(backend: Backend, config: GANConfig) -> dict[str, list[float]]:
    """Global mean discriminator and generator losses per step (one collective at the end)."""
    k = config.accumulation
    if backend.options.accumulation_steps != k:
        raise ValueError(f"BackendOptions.accumulation_steps={backend.options.accumulation_steps}"
                         f" must equal GANConfig.accumulation={k} (Horovod's "
                         "backward_passes_per_step)")
    # each rank its own initial weights: equal ones are the backend's broadcast (loop.build)
    seed_everything(init_seed(config.seed, backend.rank))
    g_model, d_model = Generator(config.noise, config.hidden), Discriminator(config.hidden)
    seed_everything(config.seed)
    gen, opt_g = backend.prepare(g_model, torch.optim.SGD(
        g_model.parameters(), lr=config.lr, momentum=config.momentum))
    disc, opt_d = backend.prepare(d_model, torch.optim.SGD(
        d_model.parameters(), lr=config.lr, momentum=config.momentum))
    batches = ShardedBatches(ring_dataset(config.samples, config.noise, config.seed),
                             config.batch_size, backend.rank, backend.world_size, config.seed)
    bce = nn.BCEWithLogitsLoss()
    d_losses, g_losses = [], []
    for _ in range(config.steps):
        backend.zero_grad(opt_d)
        d_total = torch.zeros((), dtype=torch.float64)
        for micro in range(k):
            real, z = (t.to(backend.device) for t in next(batches))
            with torch.no_grad():
                fake = gen(z)
            with backend.accumulate(disc, last=micro == k - 1):
                out_real, out_fake = disc(real), disc(fake)
                loss = (bce(out_real, torch.ones_like(out_real))
                        + bce(out_fake, torch.zeros_like(out_fake))) / (2 * k)
                loss.backward()
            d_total += loss.detach().double().cpu()
        backend.step(opt_d)
        backend.zero_grad(opt_g)
        g_total = torch.zeros((), dtype=torch.float64)
        for micro in range(k):
            _, z = (t.to(backend.device) for t in next(batches))
            with backend.accumulate(gen, last=micro == k - 1), frozen(backend, disc):
                out = disc(gen(z))
                loss = bce(out, torch.ones_like(out)) / k
                loss.backward()
            g_total += loss.detach().double().cpu()
        backend.step(opt_g)
        d_losses.append(d_total)
        g_losses.append(g_total)
    both = torch.stack([torch.stack(d_losses), torch.stack(g_losses)])
    both = backend.all_reduce(both, op="sum") / backend.world_size
    return {"discriminator": both[0].tolist(), "generator": both[1].tolist()}

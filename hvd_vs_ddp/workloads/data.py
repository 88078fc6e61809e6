"""Data sets and sharding: the same seed gives every backend the same global batches.

Rank r of W takes every W-th sample of a seeded permutation (DistributedSampler),
so the union of the W per-rank batches of step s is exactly the batch of step s
that one process sees with batch size W x B. That is what makes `single` on the
global batch the reference for every distributed run.

    python -m hvd_vs_ddp.workloads.data      # shows the shards of a tiny data set
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset

from hvd_vs_ddp.common import values
from hvd_vs_ddp.common.errors import InputError


def synthetic_classification(n: int, features: int, classes: int, seed: int) -> TensorDataset:
    """Gaussian inputs labelled by a fixed random linear teacher (learnable)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    teacher = torch.randn(features, classes, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return TensorDataset(x, y)


def synthetic_images(n: int, channels: int, size: int, classes: int, seed: int,
                     dense: bool = False) -> TensorDataset:
    """Random images with class labels, or per-pixel labels when `dense`."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, channels, size, size, generator=g)
    if dense:
        y = torch.randint(0, classes, (n, size, size), generator=g)
    else:
        y = torch.randint(0, classes, (n,), generator=g)
    return TensorDataset(x, y)


def synthetic_tokens(n: int, seq_len: int, vocab: int, seed: int) -> TensorDataset:
    """Token sequences with structure to learn: each is an arithmetic progression mod vocab."""
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, vocab, (n, 1), generator=g)
    stride = torch.randint(1, 7, (n, 1), generator=g)
    seq = (start + stride * torch.arange(seq_len + 1)) % vocab
    return TensorDataset(seq[:, :-1].contiguous(), seq[:, 1:].contiguous())


def digits(train: bool, seed: int = 0) -> TensorDataset:
    """scikit-learn's bundled 8x8 handwritten digits (1,797 images, no download).

    A fixed, seeded 80/20 split; pixels scaled to [0, 1].
    """
    pixels, labels = digits_arrays()
    x = torch.tensor(pixels, dtype=torch.float32) / 16.0
    y = torch.tensor(labels, dtype=torch.long)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    cut = int(0.8 * len(x))
    idx = perm[:cut] if train else perm[cut:]
    return TensorDataset(x[idx], y[idx])


DIGITS_SHAPE = (1797, 64)


def digits_arrays() -> tuple[Any, Any]:
    """load_digits()'s pixels (1797 x 64, values 0-16) and labels (0-9), read from the
    CSV file scikit-learn ships (sklearn/datasets/data/digits.csv.gz, pixels then label)
    without importing sklearn: `import sklearn.datasets` costs every rank of a cell that
    runs time-to-accuracy about a second of CPU (scipy.stats, most of it), which on a
    few cores is start-up time of every cell. A file that is missing or not of that
    shape (another scikit-learn layout) falls back to load_digits() itself, and
    tests/unit/test_data.py requires both to give the same arrays."""
    import gzip
    from importlib.util import find_spec

    import numpy as np

    spec = find_spec("sklearn")  # locates the package without running its __init__
    where = spec.submodule_search_locations if spec is not None else None
    if where:
        path = Path(list(where)[0]) / "datasets" / "data" / "digits.csv.gz"
        try:
            with gzip.open(path, "rt") as f:
                table = np.loadtxt(f, delimiter=",")
        except (OSError, ValueError):
            table = None
        if table is not None and table.shape == (DIGITS_SHAPE[0], DIGITS_SHAPE[1] + 1):
            labels = table[:, -1].astype(int)
            if labels.min() >= 0 and labels.max() <= 9:
                return table[:, :-1], labels
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data, data.target


CIFAR10_FILES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch", "batches.meta")


def check_data_dir(root: str | Path, what: str = "--data-dir") -> Path:
    """Refuse, before any rank starts, a --data-dir the loaders could not train on:
    CIFAR-10 with a missing file, or an ImageFolder without at least one readable image
    in every class folder. Returns the resolved path; InputError otherwise (its message
    names the value as `what`: the option, or a workload's parameter)."""
    from PIL import Image, UnidentifiedImageError
    from torchvision.datasets.folder import IMG_EXTENSIONS

    try:
        root = values.directory(root)
    except ValueError as err:
        raise InputError(f"{what} {Path(root).expanduser()}: {err}") from None
    cifar = root / "cifar-10-batches-py"
    if cifar.is_dir():
        missing = [f for f in CIFAR10_FILES if not (cifar / f).is_file()]
        if missing:
            raise InputError(f"{what} {root}: {cifar} lacks {', '.join(missing)}; "
                             "expected the python version of CIFAR-10, unpacked")
        return root.resolve()
    classes = sorted(d for d in root.iterdir() if d.is_dir())
    if not classes:
        raise InputError(f"{what} {root}: no class folders; expected an ImageFolder "
                         "(ROOT/CLASS/IMAGE.jpg) or ROOT/cifar-10-batches-py")
    for folder in classes:
        images = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMG_EXTENSIONS)
        if not images:
            raise InputError(f"{what} {root}: class folder {folder.name!r} holds no "
                             f"image ({', '.join(IMG_EXTENSIONS)})")
        try:
            with Image.open(images[0]) as img:
                img.verify()
        except (OSError, UnidentifiedImageError) as exc:
            raise InputError(f"{what} {root}: {images[0]} is not a readable image "
                             f"({exc})") from None
    return root.resolve()


def image_folder(root: str | Path, size: int):
    """An ImageFolder (or CIFAR-10 under root/cifar-10-batches-py) from a local --data-dir."""
    from torchvision import datasets, transforms

    root = Path(root)
    tf = transforms.Compose([transforms.Resize((size, size)), transforms.ToTensor()])
    if (root / "cifar-10-batches-py").is_dir():
        return datasets.CIFAR10(str(root), train=True, download=False, transform=tf)
    if not root.is_dir():
        raise FileNotFoundError(f"--data-dir {root} does not exist")
    return datasets.ImageFolder(str(root), transform=tf)


class ShardedBatches:
    """Endless per-rank batches: DistributedSampler + DataLoader, epoch after epoch."""

    def __init__(self, dataset: Dataset, batch_size: int, rank: int, world_size: int,
                 seed: int, num_workers: int = 0, pin_memory: bool = False) -> None:
        self.sampler: DistributedSampler = DistributedSampler(
            dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed,
            drop_last=True)
        if len(self.sampler) < batch_size:
            samples = len(dataset)  # type: ignore[arg-type]  # map-style: has __len__
            raise ValueError(
                f"data set of {samples} samples gives each of {world_size} ranks "
                f"{len(self.sampler)} samples, fewer than one batch of {batch_size}")
        self.loader = DataLoader(dataset, batch_size=batch_size, sampler=self.sampler,
                                 drop_last=True, num_workers=num_workers,
                                 pin_memory=pin_memory,
                                 persistent_workers=num_workers > 0)
        self.workers = num_workers
        self.epoch = 0
        self._it: Iterator | None = None

    def __iter__(self) -> "ShardedBatches":
        return self

    def worker_pids(self) -> list[int]:
        """Process ids of the DataLoader's workers (they persist across epochs); empty
        without workers or before the first batch."""
        it = self._it if self._it is not None else getattr(self.loader, "_iterator", None)
        return [w.pid for w in getattr(it, "_workers", []) if w.pid is not None]

    def __next__(self):
        while True:
            if self._it is None:
                self.sampler.set_epoch(self.epoch)
                self._it = iter(self.loader)
            try:
                return next(self._it)
            except StopIteration:
                self._it = None
                self.epoch += 1


if __name__ == "__main__":
    ds = synthetic_classification(16, 4, 3, seed=0)
    for r in range(2):
        x, _ = next(ShardedBatches(ds, 4, r, 2, seed=0))
        print(f"rank {r} of 2, first batch rows: {x[:, 0].tolist()}")
    x, _ = next(ShardedBatches(ds, 8, 0, 1, seed=0))
    print(f"single, batch 8, first batch rows: {x[:, 0].tolist()}")

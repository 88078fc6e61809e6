"""The plan's data order: step s trains on global batch s, at any world size.

A recovery plan holds the global batch constant, so the samples of a step must not
depend on how many ranks are left: global batch s (1-based) is the s-th slice of a
seeded permutation of the data set (a new permutation each epoch), and rank r of W
takes rows r, r+W, r+2W... of it, the shards `Trainer(emulate_ranks=W)` cuts in one
process. Resuming at step s is positioning the stream there: no sampler state to save.

    batches = PlanBatches(dataset, global_batch=64, rank=0, world=2, seed=0, next_step=1)
    x, y = next(batches)          # rank 0's half of global batch 1
    python -m hvd_vs_ddp.recovery.batches      # shows the shards of a tiny data set
"""
from __future__ import annotations

import torch
from torch.utils.data import Dataset, TensorDataset, default_collate


class PlanBatches:
    """An endless iterator of this rank's shard of global batch next_step, next_step+1..."""

    def __init__(self, dataset: Dataset, global_batch: int, rank: int, world: int,
                 seed: int, next_step: int = 1) -> None:
        self.dataset, self.global_batch = dataset, global_batch
        self.rank, self.world, self.seed = rank, world, seed
        self.next_step = next_step
        self.size = len(dataset)  # type: ignore[arg-type]  # map-style: has __len__
        self.per_epoch = self.size // global_batch
        if self.per_epoch < 1:
            raise ValueError(f"data set of {self.size} samples holds no global batch of "
                             f"{global_batch}")
        if global_batch % world:
            raise ValueError(f"global batch {global_batch} does not split over {world} ranks")
        self._perm: tuple[int, torch.Tensor] | None = None

    def indices(self, step: int) -> torch.Tensor:
        """The data set indices of global batch `step` (1-based), all ranks."""
        epoch, i = divmod(step - 1, self.per_epoch)
        if self._perm is None or self._perm[0] != epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perm = (epoch, torch.randperm(self.size, generator=g))
        return self._perm[1][i * self.global_batch:(i + 1) * self.global_batch]

    def shard(self, step: int):
        idx = self.indices(step)[self.rank::self.world]
        if isinstance(self.dataset, TensorDataset):
            return tuple(t[idx] for t in self.dataset.tensors)
        return default_collate([self.dataset[int(i)] for i in idx])

    def __iter__(self) -> "PlanBatches":
        return self

    def __next__(self):
        batch = self.shard(self.next_step)
        self.next_step += 1
        return batch


if __name__ == "__main__":
    ds = TensorDataset(torch.arange(16.0), torch.zeros(16))
    for w in (1, 2):
        for r in range(w):
            print(f"rank {r} of {w}, step 1: {PlanBatches(ds, 8, r, w, 0).shard(1)[0].tolist()}")

"""What a DataLoader batch costs the main process when the GPU waits for it (CPU only).

Without this term the projection was short of CSC's Horovod cost by about 1-2 ms a step
on both of its clusters with torch 2.0 (docs/projection.md, unpinned_handoff_us). CSC's
Horovod script loads with `pin_memory=False` and its step ends in `synchronize()`, so
the next batch's hand-off and its copy from pageable memory are on the GPU's critical
path; its DDP script pins in the loader's thread, off that path. This measures, on this
host, the three host parts of that hand-off for a batch as the scripts make it (32 fp32
images of 3 x 224 x 224, from `num_workers` worker processes):

- `next(loader)` when the workers are already ahead (queue get, the shared-memory
  file descriptor passed and mapped, unpickling): the hand-off alone;
- a first read of the batch just received (a memcpy into a warm buffer, as the CUDA
  driver's staging copy reads it) against the same memcpy from a warm buffer: what
  the freshly mapped pages add over the warm-buffer rate a bandwidth test reports;
- the release of the previous batch (`images = images.cuda()` rebinds the name, so the
  main thread drops the last reference to the worker's shared memory: the mapping is
  torn down and its pages freed) while the GPU waits for the next step's launches.

    python benchmarks/measure_loader_handoff.py [--steps 60] [--workers 2] [--batch 32]
        [--gap-ms 200]
        [--sharing file_descriptor|file_system]

Prints the medians and quartiles in ms. Only the CPU side: the DMA itself is not here.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sharing", choices=("file_descriptor", "file_system"),
                    default="file_descriptor",
                    help="torch.multiprocessing's sharing strategy (file_descriptor, "
                    "Linux's default: each storage's descriptor fetched from the worker's "
                    "multiprocessing resource sharer over an authenticated connection)")
    ap.add_argument("--gap-ms", type=float, default=200.0,
                    help="time between batches (the GPU step the workers run ahead of)")
    args = ap.parse_args(argv)
    if args.steps < 10 or args.workers < 1 or args.batch < 1:
        print("measure_loader_handoff: error: --steps >= 10, --workers >= 1, --batch >= 1",
              file=sys.stderr)
        return 2
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Images(Dataset):
        def __len__(self) -> int:
            return 10**6

        def __getitem__(self, i: int):
            return torch.full((3, 224, 224), float(i % 7)), i % 1000

    torch.set_num_threads(1)
    torch.multiprocessing.set_sharing_strategy(args.sharing)
    loader = iter(DataLoader(Images(), batch_size=args.batch, num_workers=args.workers,
                             pin_memory=False, prefetch_factor=4))
    warm_src = torch.empty(args.batch, 3, 224, 224)
    warm_src.fill_(1.0)
    dst = torch.empty_like(warm_src)
    dst.copy_(warm_src)
    handoff, fresh, warm, release = [], [], [], []
    held: list = []  # the previous batch, until the next one has arrived
    for step in range(args.steps + 5):
        time.sleep(args.gap_ms / 1e3)  # the workers get ahead, as while a GPU step runs
        t0 = time.perf_counter()
        images, _ = next(loader)
        t1 = time.perf_counter()
        dst.copy_(images)  # first read of the freshly mapped batch
        t2 = time.perf_counter()
        dst.copy_(warm_src)  # the same bytes from a warm buffer
        t3 = time.perf_counter()
        held.clear()  # the last reference to the previous batch's shared memory
        t4 = time.perf_counter()
        held.append(images)
        del images
        if step >= 5:
            handoff.append(1e3 * (t1 - t0))
            fresh.append(1e3 * (t2 - t1))
            warm.append(1e3 * (t3 - t2))
            release.append(1e3 * (t4 - t3))
    mb = warm_src.numel() * 4 / 1e6
    for name, xs in (("next(loader), workers ahead", handoff),
                     (f"first read of the new batch ({mb:.1f} MB)", fresh),
                     ("same memcpy from a warm buffer", warm),
                     ("release of the previous batch", release)):
        q = statistics.quantiles(xs, n=4)
        print(f"{name:44s} median {statistics.median(xs):7.3f} ms  "
              f"[{q[0]:.3f}-{q[2]:.3f}], least {min(xs):.3f}")
    extra = statistics.median(f - w for f, w in zip(fresh, warm, strict=True))
    least = min(f - w for f, w in zip(fresh, warm, strict=True))
    print(f"first read's excess over the warm memcpy: median {extra:.3f} ms, least "
          f"{least:.3f} ms ({1e3 * extra / mb:.0f} and {1e3 * least / mb:.0f} µs per MB)")
    total = [h + (f - w) + r for h, f, w, r in zip(handoff, fresh, warm, release,
                                                    strict=True)]
    print(f"on the main thread beyond a warm pageable copy (hand-off + first-read excess + "
          f"release): median {statistics.median(total):.3f} ms, least {min(total):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Collectives: allreduce, broadcast and allgather latency and bandwidth per backend.

Message sizes from 4 B to --max-bytes (default 64 MiB; 256 MiB in the full
preset), float32. Bandwidth as nccl-tests defines it: algbw = bytes / time;
busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather, x 1 for
broadcast. Ranks meet at a barrier before each timed call; each call's time is
the slowest rank's. Every size is checked
for correctness on every rank. The machine's memcpy bandwidth, measured in the
same run, is the reference limit.

    mpirun -np 2 python -m pytest suites/test_collectives.py --max-bytes 268435456
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from hvd_vs_ddp.backends import catalog, placement, registry
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.launchers import mpi_ranks
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.harness import suite_run
from hvd_vs_ddp.harness.options import COLLECTIVE_OPS
from hvd_vs_ddp.results_schema import CollectiveRecord, CollectiveSize, MemcpyRecord

# every backend that runs on many ranks with collectives of its own
BACKENDS = tuple(n for n in registry.distributed_names()
                 if not catalog.get(n).reuses_collectives)
SIZES = [4 * 16**i for i in range(8)] + [256 * 2**20]   # 4 B, 64 B, ... 1 GiB capped below


def _sizes(max_bytes: int) -> list[int]:
    return sorted({s for s in SIZES if s <= max_bytes})


def _iters(nbytes: int, timed: int = 0) -> tuple[int, int]:
    """(warm-up, timed) iterations: many for latency, few for bandwidth; `timed` > 0
    (--collective-iters) sets the timed count for every size."""
    if timed > 0:
        return max(1, timed // 10), timed
    if nbytes <= 64 * 1024:
        return 5, 50
    if nbytes <= 4 * 2**20:
        return 2, 10
    return 1, 5


def pytest_generate_tests(metafunc):
    if "coll_cell" in metafunc.fixturenames:
        suite = suite_run.of(metafunc.config)
        names = [b for b in BACKENDS if b in suite.backends]
        chosen = suite.options.collective_ops
        ops = [op for op in COLLECTIVE_OPS if op in chosen]
        cells = [(b, op) for b in names for op in ops]
        metafunc.parametrize("coll_cell", cells, ids=[f"{b}-{op}" for b, op in cells])


def _bus_factor(op: str, n: int) -> float:
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op == "allgather":
        return (n - 1) / n
    return 1.0


def _one(backend, op: str, numel: int) -> tuple[float, bool]:
    """One collective; returns (seconds, correct)."""
    n, r, dev = backend.world_size, backend.rank, backend.device
    if op == "allreduce":
        t = torch.full((numel,), float(r + 1), device=dev)
        backend.barrier()  # every rank starts together, as the raw MPI bar does
        backend.synchronize()
        start = time.perf_counter()
        out = backend.all_reduce(t, "sum")
        backend.synchronize()
        took = time.perf_counter() - start
        ok = numel == 0 or bool(torch.all(out == n * (n + 1) / 2))
    elif op == "broadcast":
        t = torch.full((numel,), 7.0 if r == 0 else 0.0, device=dev)
        backend.barrier()
        backend.synchronize()
        start = time.perf_counter()
        out = backend.broadcast(t, 0)
        backend.synchronize()
        took = time.perf_counter() - start
        ok = numel == 0 or bool(torch.all(out == 7.0))
    else:
        t = torch.full((numel,), float(r), device=dev)
        backend.barrier()
        backend.synchronize()
        start = time.perf_counter()
        out = backend.all_gather(t)
        backend.synchronize()
        took = time.perf_counter() - start
        expect = torch.arange(n, device=dev, dtype=t.dtype).repeat_interleave(numel)
        ok = out.shape == expect.shape and bool(torch.all(out == expect))
    return took, ok


def test_collective(benchmark, suite, open_backend, coll_cell):
    name, op = coll_cell
    timeout = suite.options.collective_timeout
    backend = open_backend(name, BackendOptions(timeout_s=timeout))
    if backend.world_size < 2:
        pytest.skip(f"{name}: a collective needs at least 2 ranks (world size 1)")
    sizes = _sizes(suite.options.max_bytes)
    results: list[dict] = []

    def sweep() -> None:
        for nbytes in sizes:
            warm, timed = _iters(nbytes, suite.options.collective_iters)
            numel = max(nbytes // 4, 1)
            for _ in range(warm):
                _one(backend, op, numel)
            times, ok = [], True
            for _ in range(timed):
                took, good = _one(backend, op, numel)
                times.append(took)
                ok &= good
            results.append({"bytes": numel * 4, "times": times, "ok": ok})

    benchmark.pedantic(sweep, rounds=1, warmup_rounds=0, iterations=1)
    everyone = backend.all_gather_object([(r["times"], r["ok"]) for r in results])
    n = backend.world_size
    rows = []
    for i, res in enumerate(results):
        slowest = np.max(np.asarray([e[i][0] for e in everyone]), axis=0)
        correct = all(e[i][1] for e in everyone)
        median = float(np.median(slowest))
        algbw = res["bytes"] / median / 1e9
        rows.append(CollectiveSize(bytes=res["bytes"], times=slowest.tolist(),
                                   time_median=median, algbw_gbps=algbw,
                                   busbw_gbps=algbw * _bus_factor(op, n), correct=correct))
    benchmark.group = f"collective {op}"
    benchmark.extra_info.update(CollectiveRecord(
        backend=name, op=op, dtype="float32",
        world_size=n, launcher=backend.env.launcher,
        backend_meta=backend.metadata(), sizes=rows,
    ).to_dict())
    wrong = [r.bytes for r in rows if not r.correct]
    assert not wrong, f"{name} {op}: wrong result at sizes {wrong} bytes"


def test_memcpy(benchmark, suite):
    """Host (or device) memcpy bandwidth: the limit no collective can beat."""
    nbytes = min(suite.options.max_bytes, 256 * 2**20)
    env = detect()  # each rank copies on its own GPU, not all of them on GPU 0
    dev = torch.device("cuda", placement.here(env, on_gpu=True).ordinal) \
        if torch.cuda.is_available() else torch.device("cpu")
    src = torch.ones(nbytes // 4, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times: list[float] = []

    def copy() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        start = time.perf_counter()
        dst.copy_(src)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - start)

    benchmark.pedantic(copy, rounds=10, warmup_rounds=2, iterations=1)
    times = times[2:]  # the warm-up rounds appended too
    median = float(np.median(times))
    benchmark.group = "memcpy"
    env = detect()
    benchmark.extra_info.update(MemcpyRecord(
        backend="memcpy", world_size=env.world_size, launcher=env.launcher,
        device=str(dev), bytes=nbytes, times=times,
        bandwidth_gbps=nbytes / median / 1e9).to_dict())


def test_raw_mpi_allreduce(benchmark, suite, plugin):
    """mpi4py's own Allreduce on the same sizes: the bar ddp-mpi and Horovod-MPI are held to."""
    if plugin.env.world_size < 2 or not mpi_ranks():
        pytest.skip("raw MPI allreduce: needs an MPI launcher and at least 2 ranks")
    try:
        from mpi4py import MPI
    except ImportError as exc:
        pytest.skip(f"raw MPI allreduce: {exc}")
    comm, n = MPI.COMM_WORLD, plugin.env.world_size
    sizes = _sizes(suite.options.max_bytes)
    results: list[dict] = []

    def sweep() -> None:
        for nbytes in sizes:
            warm, timed = _iters(nbytes, suite.options.collective_iters)
            buf = np.full(max(nbytes // 4, 1), comm.rank + 1, dtype=np.float32)
            out = np.empty_like(buf)
            times = []
            for i in range(warm + timed):
                comm.Barrier()
                start = time.perf_counter()
                comm.Allreduce(buf, out, op=MPI.SUM)
                took = time.perf_counter() - start
                if i >= warm:
                    times.append(took)
            results.append({"bytes": buf.nbytes, "times": times,
                            "ok": bool(np.all(out == n * (n + 1) / 2))})

    benchmark.pedantic(sweep, rounds=1, warmup_rounds=0, iterations=1)
    everyone = plugin.coord.gather([(r["times"], r["ok"]) for r in results], "raw MPI times")
    rows = []
    for i, res in enumerate(results):
        slowest = np.max(np.asarray([e[i][0] for e in everyone]), axis=0)
        median = float(np.median(slowest))
        algbw = res["bytes"] / median / 1e9
        rows.append(CollectiveSize(bytes=res["bytes"], times=slowest.tolist(),
                                   time_median=median, algbw_gbps=algbw,
                                   busbw_gbps=algbw * _bus_factor("allreduce", n),
                                   correct=all(e[i][1] for e in everyone)))
    benchmark.group = "collective allreduce"
    benchmark.extra_info.update(CollectiveRecord(
        backend="mpi4py-raw", op="allreduce", dtype="float32",
        world_size=n, launcher=plugin.env.launcher,
        backend_meta={"backend": "mpi4py-raw", "mpi": MPI.Get_library_version().splitlines()[0]},
        sizes=rows,
    ).to_dict())
    assert all(r.correct for r in rows)

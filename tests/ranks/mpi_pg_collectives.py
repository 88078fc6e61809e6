"""Rank script: every collective of hvd_vs_ddp/backends/mpi_pg/ checked against numpy.

Each rank builds deterministic inputs for EVERY rank, so the expected answer is
computed locally (numpy, float64, then cast) and compared with what the
"mpi4py" process group returned. Covered: allreduce (SUM AVG MIN MAX PRODUCT),
broadcast, all_gather (list, also uneven), all_gather_single (also in place),
reduce_scatter (list), reduce_scatter_single, barrier, allreduce_coalesced;
dtypes float32 float64 float16 bfloat16 int32 int64; sizes 0, 1, 1023; one
64 MiB float32 allreduce; non-contiguous tensors; subgroups; errors for
unsupported ops/dtypes; a collective that times out. Results must be exact,
except AVG on floating types (within one unit in the last place).

Run (from the repo root; as root also export OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    mpirun -np 2 python tests/ranks/mpi_pg_collectives.py
    mpirun -np 3 --oversubscribe python tests/ranks/mpi_pg_collectives.py --reverse-ranks
    HVD_VS_DDP_MPI_PG_PROGRESS=nonblocking mpirun -np 2 python tests/ranks/mpi_pg_collectives.py
--reverse-ranks gives torch rank = size-1-MPI rank, to check the rank mapping.
Exit status 1 (on every rank) if any case failed; each failure is printed.
tests/system/test_mpi_pg.py runs it (through tests/ranks/mpi_pg_parts.py).
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.distributed import ReduceOp

from hvd_vs_ddp.backends import mpi_pg
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.rendezvous import store_for

warnings.filterwarnings("ignore", category=FutureWarning)  # all_gather_into_tensor naming

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
          torch.int64]
SIZES = [0, 1, 1023]
OPS = {"SUM": ReduceOp.SUM, "AVG": ReduceOp.AVG, "MIN": ReduceOp.MIN, "MAX": ReduceOp.MAX,
       "PRODUCT": ReduceOp.PRODUCT}
FAILURES: list[str] = []
CHECKED = [0]
RANK = SIZE = 0

all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def check(case: str, ok: bool, detail: str = "") -> None:
    CHECKED[0] += 1
    if not ok:
        FAILURES.append(f"rank {RANK}: {case}: {detail}")
        print("FAIL", FAILURES[-1], flush=True)


def case(name: str, fn) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - record and go on: all ranks must continue
        FAILURES.append(f"rank {RANK}: {name}: raised {type(exc).__name__}: {exc}")
        print("FAIL", FAILURES[-1], flush=True)


def vals(r: int, n: int, product: bool = False) -> np.ndarray:
    """Rank r's input: small integers, exact in every dtype (float64 array)."""
    idx = np.arange(n)
    if product:
        return np.array([1.0, -1.0, 2.0, 1.0, -2.0])[(idx * 3 + r) % 5]
    return (((idx * 7 + r * 13 + 3) % 11) - 5).astype(np.float64)


def tt(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(dtype)


def reduce_ref(op: str, stack: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    f = {"SUM": np.sum, "PRODUCT": np.prod, "MIN": np.min, "MAX": np.max,
         "AVG": np.sum}[op]
    out = f(stack, axis=0)
    if op == "AVG":
        out = out / stack.shape[0]
        if not dtype.is_floating_point:
            out = np.trunc(out)
    return tt(out, dtype)


def same(got: torch.Tensor, exp: torch.Tensor, op: str = "") -> tuple[bool, str]:
    if got.shape != exp.shape or got.dtype != exp.dtype:
        return False, (f"shape/dtype {tuple(got.shape)} {got.dtype} != "
                       f"{tuple(exp.shape)} {exp.dtype}")
    if op == "AVG" and got.dtype.is_floating_point:
        ok = torch.allclose(got.double(), exp.double(), rtol=torch.finfo(got.dtype).eps, atol=0)
    else:
        ok = torch.equal(got, exp)
    if ok:
        return True, ""
    bad = (got.double() - exp.double()).abs().argmax().item() if got.numel() else 0
    return False, (f"first worst element {bad}: got {got.reshape(-1)[bad].item()} "
                   f"expected {exp.reshape(-1)[bad].item()}")


def test_allreduce() -> None:
    for dtype in DTYPES:
        pending = []
        for op in OPS:  # queue all of them, then wait: exercises the async queue
            for n in SIZES:
                x = tt(vals(RANK, n, op == "PRODUCT"), dtype)
                w = dist.all_reduce(x, op=OPS[op], async_op=True)
                pending.append((op, n, x, w))
        for op, n, x, w in pending:
            name = f"allreduce {op} {dtype} n={n}"
            w.wait()
            stack = np.stack([vals(r, n, op == "PRODUCT") for r in range(SIZE)])
            check(name, *same(x, reduce_ref(op, stack, dtype), op))
    x = tt(vals(RANK, 5), torch.float32)
    fut = dist.all_reduce(x, async_op=True).get_future()
    res = fut.wait()
    check("allreduce future value", isinstance(res, list) and res[0] is not None
          and torch.equal(res[0], x), f"{res!r}")


def test_broadcast() -> None:
    for dtype in DTYPES:
        for n in SIZES:
            for src in sorted({0, SIZE - 1}):
                x = tt(vals(RANK, n), dtype)
                dist.broadcast(x, src=src)
                check(f"broadcast {dtype} n={n} src={src}", *same(x, tt(vals(src, n), dtype)))


def test_allgather() -> None:
    for dtype in DTYPES:
        for n in SIZES:
            outs = [torch.full((n,), 99, dtype=dtype) for _ in range(SIZE)]
            dist.all_gather(outs, tt(vals(RANK, n), dtype))
            for r in range(SIZE):
                check(f"all_gather {dtype} n={n} [{r}]", *same(outs[r], tt(vals(r, n), dtype)))
            out = torch.full((SIZE * n,), 99, dtype=dtype)
            all_gather_single(out, tt(vals(RANK, n), dtype))
            exp = tt(np.concatenate([vals(r, n) for r in range(SIZE)]), dtype)
            check(f"all_gather_single {dtype} n={n}", *same(out, exp))
            # in place: the input is this rank's slot of the output (FSDP does this)
            out = torch.full((SIZE, n), 99, dtype=dtype)
            out[RANK] = tt(vals(RANK, n), dtype)
            all_gather_single(out, out[RANK])
            check(f"all_gather_single in-place {dtype} n={n}", *same(out.reshape(-1), exp))
    outs = [torch.zeros(r + 1) for r in range(SIZE)]  # uneven sizes: Allgatherv
    dist.all_gather(outs, tt(vals(RANK, RANK + 1), torch.float32))
    for r in range(SIZE):
        check(f"all_gather uneven [{r}]", *same(outs[r], tt(vals(r, r + 1), torch.float32)))


def rs_vals(r: int, j: int, n: int, product: bool) -> np.ndarray:
    """What rank r contributes to rank j's block in reduce_scatter."""
    return vals(r + 5 * j, n, product)


def test_reduce_scatter() -> None:
    for dtype in DTYPES:
        for op in OPS:
            prod = op == "PRODUCT"
            for n in SIZES:
                exp = reduce_ref(op, np.stack([rs_vals(r, RANK, n, prod) for r in range(SIZE)]),
                                 dtype)
                ins = [tt(rs_vals(RANK, j, n, prod), dtype) for j in range(SIZE)]
                out = torch.full((n,), 99, dtype=dtype)
                dist.reduce_scatter(out, ins, op=OPS[op])
                check(f"reduce_scatter {op} {dtype} n={n}", *same(out, exp, op))
                out = torch.full((n,), 99, dtype=dtype)
                reduce_scatter_single(out, torch.cat(ins), op=OPS[op])
                check(f"reduce_scatter_single {op} {dtype} n={n}", *same(out, exp, op))


def test_noncontiguous() -> None:
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        base = tt(vals(RANK, 33 * 31), dtype).reshape(33, 31)
        x = base.clone().t()  # transposed view: not contiguous
        dist.all_reduce(x)
        stack = np.stack([vals(r, 33 * 31) for r in range(SIZE)])
        check(f"allreduce transposed {dtype}", not x.is_contiguous()
              and same(x, reduce_ref("SUM", stack, dtype).reshape(33, 31).t())[0])
        big = torch.full((2 * 1023,), 7, dtype=dtype)
        view = big[::2]
        view.copy_(tt(vals(RANK, 1023), dtype))
        dist.all_reduce(view, op=ReduceOp.MAX)
        stack = np.stack([vals(r, 1023) for r in range(SIZE)])
        check(f"allreduce strided {dtype}", *same(view, reduce_ref("MAX", stack, dtype)))
        check(f"allreduce strided {dtype} leaves gaps alone", bool((big[1::2] == 7).all()))
        y = tt(vals(RANK, 33 * 31), dtype).reshape(33, 31).t()
        dist.broadcast(y, src=SIZE - 1)
        check(f"broadcast transposed {dtype}",
              *same(y, tt(vals(SIZE - 1, 33 * 31), dtype).reshape(33, 31).t()))
        grid = torch.zeros(17, SIZE, dtype=dtype)  # outputs are columns: strided views
        inp = tt(vals(RANK, 34), dtype)[::2]
        dist.all_gather([grid[:, r] for r in range(SIZE)], inp)
        for r in range(SIZE):
            check(f"all_gather strided {dtype} [{r}]", *same(grid[:, r],
                                                            tt(vals(r, 34)[::2], dtype)))
        out = torch.zeros(SIZE * 9, 2, dtype=dtype).t()[0]  # strided output
        all_gather_single(out, tt(vals(RANK, 18), dtype)[::2])
        exp = tt(np.concatenate([vals(r, 18)[::2] for r in range(SIZE)]), dtype)
        check(f"all_gather_single strided {dtype}", *same(out, exp))
        src = tt(np.concatenate([rs_vals(RANK, j, 9, False) for j in range(SIZE)]), dtype)
        wide = torch.zeros(2, SIZE * 9, dtype=dtype)
        wide[0] = src
        out = torch.zeros(9, 3, dtype=dtype)[:, 1]
        reduce_scatter_single(out, wide.t()[:, 0], op=ReduceOp.SUM)
        exp = reduce_ref("SUM", np.stack([rs_vals(r, RANK, 9, False) for r in range(SIZE)]),
                         dtype)
        check(f"reduce_scatter_single strided {dtype}", *same(out, exp))


def test_big() -> None:
    numel = 64 * 2**20 // 4  # 64 MiB of float32
    idx = torch.arange(numel, dtype=torch.int64) % 97
    x = (idx + RANK).to(torch.float32)
    t0 = time.perf_counter()
    w = dist.all_reduce(x, async_op=True)
    t_return = time.perf_counter() - t0
    w.wait()
    t_done = time.perf_counter() - t0
    exp = (idx * SIZE + SIZE * (SIZE - 1) // 2).to(torch.float32)
    check("allreduce 64 MiB float32", *same(x, exp))
    if RANK == 0:
        print(f"64 MiB allreduce: call returned after {t_return * 1e3:.2f} ms, "
              f"done after {t_done * 1e3:.1f} ms", flush=True)


def test_misc() -> None:
    dist.barrier()
    ts = [tt(vals(RANK, n), torch.float64) for n in (3, 0, 10)]
    pg = dist.group.WORLD
    pg.allreduce_coalesced(ts, dist.AllreduceCoalescedOptions()).wait()
    for t, n in zip(ts, (3, 0, 10), strict=True):
        exp = reduce_ref("SUM", np.stack([vals(r, n) for r in range(SIZE)]), torch.float64)
        check(f"allreduce_coalesced n={n}", *same(t, exp))
    objs = [None] * SIZE
    dist.all_gather_object(objs, {"rank": RANK})
    check("all_gather_object", objs == [{"rank": r} for r in range(SIZE)], repr(objs))
    info = mpi_pg.describe()
    check("describe()", info["implementation"] == "mpi4py" and "mpi_library_version" in info
          and isinstance(info["cuda_aware"], bool) and info["async_mode"] in mpi_pg.PROGRESS_MODES,
          repr(info))
    check("is_available()", bool(mpi_pg.is_available()), repr(mpi_pg.is_available()))
    check("register() idempotent", mpi_pg.register() == "mpi4py" == mpi_pg.register())
    if RANK == 0:
        print("describe():", info, flush=True)


def test_subgroups() -> None:
    members = list(range(1, SIZE)) or [0]  # group ranks differ from global ranks
    g = dist.new_group(members)
    other = dist.new_group(list(range(SIZE)))
    if RANK in members:
        x = tt(vals(RANK, 11), torch.float32)
        y = tt(vals(RANK, 11), torch.int64)
        wx = dist.all_reduce(x, group=g, async_op=True)  # two groups in flight at once
        wy = dist.all_reduce(y, group=other, async_op=True)
        wx.wait()
        wy.wait()
        exp = reduce_ref("SUM", np.stack([vals(r, 11) for r in members]), torch.float32)
        check("subgroup allreduce", *same(x, exp))
        z = tt(vals(RANK, 4), torch.float32)
        dist.broadcast(z, src=members[-1], group=g)
        check("subgroup broadcast (global src)", *same(z, tt(vals(members[-1], 4),
                                                             torch.float32)))
    else:
        y = tt(vals(RANK, 11), torch.int64)
        dist.all_reduce(y, group=other)
    check("subgroup: world allreduce alongside", *same(
        y, reduce_ref("SUM", np.stack([vals(r, 11) for r in range(SIZE)]), torch.int64)))


def expect_error(name: str, fn, exc_type, *words: str) -> None:
    try:
        fn()
    except exc_type as exc:
        msg = str(exc)
        check(name, all(w in msg for w in words), f"message {msg!r} lacks one of {words}")
        return
    except Exception as exc:  # noqa: BLE001
        check(name, False, f"raised {type(exc).__name__}: {exc} instead of {exc_type.__name__}")
        return
    check(name, False, f"no error; expected {exc_type.__name__} naming {words}")


def test_errors() -> None:
    pg = dist.group.WORLD
    x = torch.ones(4)
    expect_error("BAND on float32", lambda: dist.all_reduce(x, op=ReduceOp.BAND), TypeError,
                 "allreduce", "BAND", "float32")
    expect_error("PREMUL_SUM", lambda: dist.all_reduce(x, op=dist._make_nccl_premul_sum(2.0)),
                 ValueError, "allreduce", "PREMUL_SUM", "float32")
    opts = dist.AllreduceOptions()
    cplx = torch.ones(2, dtype=torch.complex64)  # dist.all_reduce would view_as_real it
    expect_error("complex allreduce", lambda: pg.allreduce([cplx], opts), TypeError,
                 "allreduce", "complex64")
    expect_error("bool allreduce", lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool)),
                 TypeError, "allreduce", "torch.bool")
    expect_error("sparse allreduce", lambda: dist.all_reduce(torch.ones(2).to_sparse()),
                 TypeError, "allreduce", "sparse")
    expect_error("reduce (not implemented)", lambda: dist.reduce(x, dst=0), NotImplementedError,
                 "reduce", "not implemented", "float32")
    out = torch.empty(4)
    expect_error("all_to_all_single (not implemented)",
                 lambda: dist.all_to_all_single(out, x), NotImplementedError, "all_to_all_single")
    expect_error("reduce_scatter_single size mismatch",
                 lambda: reduce_scatter_single(torch.empty(3), torch.empty(3 * SIZE + 1)),
                 ValueError, "reduce_scatter_single")


def test_timeout() -> None:
    """Rank 0 allreduces alone on a 2 s group: it must get a clear timeout error.
    The others join 4 s later, so that the orphaned collective still completes."""
    g = dist.new_group(list(range(SIZE)), timeout=datetime.timedelta(seconds=2))
    x = torch.ones(8)
    if RANK == 0:
        t0 = time.monotonic()
        w = dist.all_reduce(x, group=g, async_op=True)
        expect_error("timeout raises", w.wait, mpi_pg.CollectiveTimeout,
                     "allreduce", "timed out", "torch.float32")
        took = time.monotonic() - t0
        check("timeout honoured (1.5-15 s)", 1.5 < took < 15, f"took {took:.1f} s")
        # what DDP waits on: the Future must carry the error too, not hang
        expect_error("timeout reaches the Future", w.get_future().wait, RuntimeError,
                     "allreduce", "timed out")
        expect_error("group unusable after timeout", lambda: dist.all_reduce(x, group=g),
                     RuntimeError, "unusable", "timed out")
    else:
        time.sleep(4.0)
        dist.all_reduce(x, group=g)


def init(reverse: bool) -> None:
    global RANK, SIZE
    world = MPI.COMM_WORLD
    SIZE = world.Get_size()
    RANK = SIZE - 1 - world.Get_rank() if reverse else world.Get_rank()
    # the project's own rendezvous: rank 0 opens a store, MPI shares its address
    store = store_for(detect(), datetime.timedelta(seconds=120))
    dist.init_process_group(mpi_pg.register(), rank=RANK, world_size=SIZE, store=store,
                            timeout=datetime.timedelta(seconds=60))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reverse-ranks", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    init(args.reverse_ranks)
    check("torch rank", dist.get_rank() == RANK and dist.get_world_size() == SIZE)
    t0 = time.perf_counter()
    for test in (test_allreduce, test_broadcast, test_allgather, test_reduce_scatter,
                 test_noncontiguous, test_big, test_misc, test_subgroups, test_errors,
                 test_timeout):
        case(test.__name__, test)
    dist.barrier()
    dist.destroy_process_group()
    failed = MPI.COMM_WORLD.allreduce(len(FAILURES))
    if RANK == 0:
        print(f"{CHECKED[0]} checks per rank, {failed} failures over {SIZE} ranks, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

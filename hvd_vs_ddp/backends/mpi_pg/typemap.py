"""torch dtypes and ReduceOps mapped to MPI datatypes and ops, and the input checks.

Lookups are cached per (ReduceOp kind, dtype) and per item size, so that a collective
on the fast path pays one dict lookup for them; every refusal is a TypeError or
ValueError naming the operation, the ReduceOp and the dtype.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import torch

from .common import INT_MAX, NATIVE, RED_OPS, VIA_FLOAT32, mpi


class RedPlan(NamedTuple):
    """How one (ReduceOp, dtype) pair is reduced."""

    name: str        # "SUM", "AVG", ...; AVG runs as SUM and is divided afterwards
    mpi_op: Any      # MPI.Op
    work: torch.dtype  # the dtype MPI reduces in (float32 for float16/bfloat16)
    mpi_type: Any    # MPI datatype of `work`


_PLANS: dict[tuple[Any, torch.dtype], RedPlan] = {}  # (RedOpType value, dtype)
_MOVE_TYPES: dict[int, Any] = {}


def red_plan(reduce_op: Any, dtype: torch.dtype, opname: str) -> RedPlan:
    """The cached RedPlan for a torch ReduceOp on `dtype`, or a clear error."""
    kind = getattr(reduce_op, "op", reduce_op)  # ReduceOp -> RedOpType
    key = (getattr(kind, "value", kind), dtype)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _make_plan(kind, dtype, opname)
    return plan


def _make_plan(kind: Any, dtype: torch.dtype, opname: str) -> RedPlan:
    name = getattr(kind, "name", str(kind))
    if name not in RED_OPS:
        raise ValueError(f"mpi4py process group: {opname} does not support ReduceOp.{name} "
                         f"(dtype {dtype}); supported: SUM, AVG, PRODUCT, MIN, MAX and, on "
                         "integers, BAND, BOR, BXOR")
    MPI = mpi()
    table = {torch.float32: MPI.FLOAT, torch.float64: MPI.DOUBLE, torch.int8: MPI.INT8_T,
             torch.uint8: MPI.UINT8_T, torch.int16: MPI.INT16_T, torch.int32: MPI.INT32_T,
             torch.int64: MPI.INT64_T}
    work = torch.float32 if dtype in VIA_FLOAT32 else dtype
    if work not in table:
        raise TypeError(f"mpi4py process group: {opname} with ReduceOp.{name} does not "
                        f"support dtype {dtype}; reductions take {', '.join(NATIVE)}, "
                        "float16 and bfloat16")
    if name in ("BAND", "BOR", "BXOR") and work.is_floating_point:
        raise TypeError(f"mpi4py process group: {opname} with ReduceOp.{name} does not "
                        f"support dtype {dtype}; bitwise reductions need an integer dtype")
    mpi_op = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN,
              "MAX": MPI.MAX, "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[name]
    return RedPlan(name, mpi_op, work, table[work])


def move_type(itemsize: int):
    """An MPI datatype of `itemsize` bytes, for operations that only move data."""
    mtype = _MOVE_TYPES.get(itemsize)
    if mtype is None:
        MPI = mpi()
        base = {1: MPI.BYTE, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}
        mtype = base.get(itemsize) or MPI.BYTE.Create_contiguous(itemsize).Commit()
        _MOVE_TYPES[itemsize] = mtype
    return mtype


def check(t: Any, opname: str) -> torch.Tensor:
    """`t` if it is a dense CPU or CUDA tensor MPI can address, else a clear error."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"mpi4py process group: {opname} expects tensors, got {type(t)}")
    if t.layout != torch.strided:
        raise TypeError(f"mpi4py process group: {opname} does not support {t.layout} "
                        f"tensors (dtype {t.dtype}); only dense (strided) tensors")
    if not t.is_cpu and t.device.type != "cuda":
        raise TypeError(f"mpi4py process group: {opname} does not support device "
                        f"{t.device} (dtype {t.dtype}); only cpu and cuda")
    if t.numel() > INT_MAX:
        raise ValueError(f"mpi4py process group: {opname} of {t.numel()} elements "
                         f"({t.dtype}) exceeds MPI's count limit of 2**31-1")
    return t


def msg(t: torch.Tensor, mpi_type) -> list:
    """An mpi4py message [buffer, datatype] over a contiguous tensor's memory (no copy)."""
    return [mpi().buffer.fromaddress(t.data_ptr(), t.nbytes), mpi_type]


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two tensors' memory ranges intersect?"""
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()

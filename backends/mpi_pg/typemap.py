"""Type mapping of the mpi4py process group: torch dtypes/ReduceOps to MPI, checks.

Part of the backends/mpi_pg package (its __init__ describes the design).
Tests (2 ranks over mpirun; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1):
    python -m pytest tests/test_mpi_pg.py -q
"""
from __future__ import annotations

from typing import Any

import torch

from .common import _INT_MAX, _NATIVE, _RED_OPS, _VIA_FLOAT32, _mpi

# ---------------------------------------------------------------- type mapping

def _red_dtype(dtype: torch.dtype, opname: str, op_name: str) -> tuple[torch.dtype, Any]:
    """(dtype the reduction runs in, its MPI datatype) or a clear error."""
    MPI = _mpi()
    table = {torch.float32: MPI.FLOAT, torch.float64: MPI.DOUBLE, torch.int8: MPI.INT8_T,
             torch.uint8: MPI.UINT8_T, torch.int16: MPI.INT16_T, torch.int32: MPI.INT32_T,
             torch.int64: MPI.INT64_T}
    work = torch.float32 if dtype in _VIA_FLOAT32 else dtype
    if work not in table:
        raise TypeError(f"mpi4py process group: {opname} with ReduceOp.{op_name} does not "
                        f"support dtype {dtype}; reductions take {', '.join(_NATIVE)}, "
                        "float16 and bfloat16")
    if op_name in ("BAND", "BOR", "BXOR") and work.is_floating_point:
        raise TypeError(f"mpi4py process group: {opname} with ReduceOp.{op_name} does not "
                        f"support dtype {dtype}; bitwise reductions need an integer dtype")
    return work, table[work]


def _red_op(op: Any, opname: str, dtype: torch.dtype) -> tuple[str, Any]:
    """(name, MPI.Op) for a torch ReduceOp; AVG is SUM followed by a division."""
    kind = getattr(op, "op", op)  # ReduceOp -> RedOpType
    name = getattr(kind, "name", str(kind))
    if name not in _RED_OPS:
        raise ValueError(f"mpi4py process group: {opname} does not support ReduceOp.{name} "
                         f"(dtype {dtype}); supported: SUM, AVG, PRODUCT, MIN, MAX and, on "
                         "integers, BAND, BOR, BXOR")
    MPI = _mpi()
    mpi_op = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN,
              "MAX": MPI.MAX, "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[name]
    return name, mpi_op


_MOVE_TYPES: dict[int, Any] = {}


def _move_type(itemsize: int):
    """An MPI datatype of `itemsize` bytes, for operations that only move data."""
    if itemsize not in _MOVE_TYPES:
        MPI = _mpi()
        base = {1: MPI.BYTE, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}
        if itemsize in base:
            _MOVE_TYPES[itemsize] = base[itemsize]
        else:
            _MOVE_TYPES[itemsize] = MPI.BYTE.Create_contiguous(itemsize).Commit()
    return _MOVE_TYPES[itemsize]


def _check(t: Any, opname: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"mpi4py process group: {opname} expects tensors, got {type(t)}")
    if t.layout != torch.strided:
        raise TypeError(f"mpi4py process group: {opname} does not support {t.layout} "
                        f"tensors (dtype {t.dtype}); only dense (strided) tensors")
    if t.device.type not in ("cpu", "cuda"):
        raise TypeError(f"mpi4py process group: {opname} does not support device "
                        f"{t.device} (dtype {t.dtype}); only cpu and cuda")
    if t.numel() > _INT_MAX:
        raise ValueError(f"mpi4py process group: {opname} of {t.numel()} elements "
                         f"({t.dtype}) exceeds MPI's count limit of 2**31-1")
    return t


def _msg(t: torch.Tensor, mpi_type) -> list:
    """An mpi4py message [buffer, datatype] over a contiguous tensor's memory."""
    MPI = _mpi()
    return [MPI.buffer.fromaddress(t.data_ptr(), t.numel() * t.element_size()), mpi_type]


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1 = a0 + a.numel() * a.element_size()
    b1 = b0 + b.numel() * b.element_size()
    return a0 < b1 and b0 < a1

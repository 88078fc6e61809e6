"""Records of suites/test_collectives.py: collective (with its size rows) and memcpy.

collective: one benchmark per (backend, op) holding the whole size sweep; each size
row has the per-rank message bytes, every timed iteration's seconds (the slowest
rank's), the bandwidths as nccl-tests defines them and whether every rank got the
right answer. memcpy: the machine's copy bandwidth, the limit no collective beats.

    sizes = [CollectiveSize(bytes=4, times=[1e-5], busbw_gbps=0.4, correct=True)]
    CollectiveRecord(backend="ddp-gloo", world_size=2, launcher="torchrun",
                     op="allreduce", sizes=sizes).to_dict()
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hvd_vs_ddp.results_schema import summary
from hvd_vs_ddp.results_schema.fields import (
    Record,
    flag,
    instance,
    integer,
    listof,
    number,
    numbers,
    one_of,
    opt,
    req,
    text,
)
from hvd_vs_ddp.results_schema.kinds.base import BenchmarkRecord

OPS = ("allreduce", "broadcast", "allgather")


@dataclass(kw_only=True)
class CollectiveSize(Record):
    """One message size of a collective sweep."""

    bytes: int = req(integer(0))
    times: list[float] = req(listof(number(0)))
    busbw_gbps: float = req(number(0))
    correct: bool = req(flag)
    time_median: float | None = opt(number(0))
    algbw_gbps: float | None = opt(number(0))


@dataclass(kw_only=True)
class CollectiveRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "collective", "collectives", "collective"

    op: str = req(one_of(*OPS))
    sizes: list[CollectiveSize] = req(listof(instance(CollectiveSize), nonempty=True),
                                      nested=CollectiveSize)
    dtype: str | None = opt(text)

    def rows(self) -> list[dict[str, Any]]:
        common = self.common_row()
        return [{**common, "op": self.op, "dtype": self.dtype or "", "bytes": int(s.bytes),
                 "time_median": summary.median(s.times) if s.times else np.nan,
                 "algbw_gbps": float(s.algbw_gbps if s.algbw_gbps is not None else np.nan),
                 "busbw_gbps": float(s.busbw_gbps), "correct": bool(s.correct)}
                for s in self.sizes]


@dataclass(kw_only=True)
class MemcpyRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "memcpy", "collectives", "memcpy"

    bytes: int = req(integer(1))
    bandwidth_gbps: float = req(number(0))
    device: str | None = opt(text)
    times: list[float] | None = opt(numbers)

    def rows(self) -> list[dict[str, Any]]:
        return [{**self.common_row(), "device": str(self.device or "cpu"),
                 "bytes": int(self.bytes), "bandwidth_gbps": float(self.bandwidth_gbps)}]

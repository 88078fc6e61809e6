"""The kind registry: extra_info["kind"] -> record class.

A new result kind is one record class (fields, checks, `rows()` frame builder) and
one line in KINDS; the loader, the report frames and the doc test pick it up.

    from hvd_vs_ddp.results_schema.kinds import KINDS, record_from_dict
    rec = record_from_dict(info, where="cells/a.json: benchmark 'x'")   # a typed record
"""
from __future__ import annotations

from typing import Any

from hvd_vs_ddp.results_schema.errors import ResultsError, UnknownKind
from hvd_vs_ddp.results_schema.kinds.base import BenchmarkRecord
from hvd_vs_ddp.results_schema.kinds.comm import OPS, CollectiveRecord, CollectiveSize, MemcpyRecord
from hvd_vs_ddp.results_schema.kinds.convergence import (
    ConvergenceRecord,
    GanConvergenceRecord,
    TimeToAccuracyRecord,
)
from hvd_vs_ddp.results_schema.kinds.recovery import RecoveryRecord
from hvd_vs_ddp.results_schema.kinds.timeline import HorovodTimelineRecord
from hvd_vs_ddp.results_schema.kinds.training import ComputeOnlyRecord, ThroughputRecord

KINDS: dict[str, type[BenchmarkRecord]] = {
    cls.KIND: cls for cls in (ThroughputRecord, ComputeOnlyRecord, ConvergenceRecord,
                              GanConvergenceRecord, TimeToAccuracyRecord, CollectiveRecord,
                              MemcpyRecord, HorovodTimelineRecord, RecoveryRecord)}


def record_from_dict(info: Any, where: str) -> BenchmarkRecord:
    """The record of one extra_info dict; UnknownKind for a kind not in KINDS."""
    if not isinstance(info, dict) or "kind" not in info:
        raise ResultsError(f"{where} has no extra_info.kind; expected results of the "
                           "hvd-vs-ddp suites.")
    kind = info["kind"]
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise UnknownKind(f"{where}: kind is {kind!r}; expected one of {', '.join(KINDS)}.",
                          kind)
    return cls.from_dict(info, f"{where} (kind {kind})")


__all__ = ["KINDS", "OPS", "BenchmarkRecord", "CollectiveRecord", "CollectiveSize",
           "ComputeOnlyRecord", "ConvergenceRecord", "GanConvergenceRecord",
           "HorovodTimelineRecord", "MemcpyRecord", "RecoveryRecord", "ThroughputRecord",
           "TimeToAccuracyRecord", "record_from_dict"]

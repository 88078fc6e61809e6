"""Record of an instrumented Horovod throughput run: horovod_timeline.

Written by suites/test_throughput.py instead of a throughput record when the job runs
with `--horovod-timeline` (suite `timeline`; `hvd-vs-ddp run` adds one such cell per
Horovod cell). Horovod's timeline writer busy-polls a core on rank 0 for as long as
the process lives, so these steps are never timed for the comparison: the record keeps
them, and where each timed step lies on the wall clock, so that a report can cut the
timeline (hvd_vs_ddp/reports/horovod_timeline.py) into steps.

    rec = HorovodTimelineRecord(backend="horovod", world_size=2, ..., timeline="x.json")
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hvd_vs_ddp.results_schema.fields import (
    Invalid,
    integer,
    listof,
    mapping,
    number,
    opt,
    req,
    text,
)
from hvd_vs_ddp.results_schema.kinds.base import BenchmarkRecord, array, as_json

_times = listof(number(0), nonempty=True)


@dataclass(kw_only=True)
class HorovodTimelineRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "horovod_timeline", "timeline", "horovod_timeline"

    workload: str = req(text)
    knobs: dict[str, Any] = req(mapping)
    per_rank_batch: int = req(integer(1))
    timeline: str = req(text)
    step_times: list[float] = req(_times)
    rank_step_starts: list[list[float]] = req(listof(listof(number(0)), nonempty=True))
    rank_step_times: list[list[float]] = req(listof(listof(number(0)), nonempty=True))
    workload_params: dict[str, Any] | None = opt(mapping)
    knob_set: str | None = opt(text)
    global_batch: int | None = opt(integer(1))

    def consistency(self) -> None:
        for name in ("rank_step_starts", "rank_step_times"):
            rows = getattr(self, name)
            if len(rows) != self.world_size:
                raise Invalid(name, f"has {len(rows)} rows; expected one per rank "
                              f"({self.world_size})")
            for i, row in enumerate(rows):
                if len(row) != len(self.step_times):
                    raise Invalid(f"{name}[{i}]", f"has {len(row)} steps; expected "
                                  f"{len(self.step_times)} (one per timed step)")

    def rows(self) -> list[dict[str, Any]]:
        return [{**self.common_row(), "workload": self.workload,
                 "workload_params": as_json(self.workload_params or {}),
                 "knob_set": self.knob_set or "default", "knobs": as_json(self.knobs),
                 "per_rank_batch": int(self.per_rank_batch), "timeline": self.timeline,
                 "steps": array(self.step_times),
                 "rank_step_starts": [list(r) for r in self.rank_step_starts],
                 "rank_step_times": [list(r) for r in self.rank_step_times]}]

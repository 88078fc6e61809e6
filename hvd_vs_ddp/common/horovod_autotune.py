"""Horovod's autotune log (HOROVOD_AUTOTUNE_LOG): what it tried and what it chose.

Horovod's ParameterManager (rank 0) writes a CSV: a header, then one row per scored
sample (hierarchical_allreduce, hierarchical_allgather, [torus_allreduce,
cache_enabled,] cycle_time_ms, tensor_fusion_threshold in MiB, score in bytes/us),
and, once tuning has finished, one more row: the best parameters with their score.
Older Horovods leave out torus_allreduce and cache_enabled; columns are read by name.

    python -m hvd_vs_ddp.common.horovod_autotune run/cells/X.horovod-autotune.csv
"""
from __future__ import annotations

import csv
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

SUFFIX = ".horovod-autotune.csv"
WANTED = ("cycle_time_ms", "tensor_fusion_threshold", "score")


class AutotuneLogError(ValueError):
    """The file is not a Horovod autotune log, or holds no scored sample."""


@dataclass(frozen=True)
class Sample:
    cycle_time_ms: float
    fusion_mb: float
    score: float               # bytes per microsecond, Horovod's own measure
    hierarchical_allreduce: bool


@dataclass(frozen=True)
class AutotuneLog:
    samples: tuple[Sample, ...]  # in the order tried (the best-parameters row excluded)
    best: Sample                 # Horovod's chosen row when settled, else the best scored
    settled: bool                # Horovod finished tuning (wrote its best-parameters row)

    def as_dict(self) -> dict:
        return {"samples": len(self.samples), "settled": self.settled,
                "best": asdict(self.best)}


def _row(row: dict[str, str]) -> Sample:
    return Sample(cycle_time_ms=float(row["cycle_time_ms"]),
                  fusion_mb=float(row["tensor_fusion_threshold"]),
                  score=float(row["score"]),
                  hierarchical_allreduce=row.get("hierarchical_allreduce", "0").strip() == "1")


def parse(text: str) -> AutotuneLog:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise AutotuneLogError("empty autotune log (tuning never scored a sample)")
    header = [h.strip() for h in lines[0].split(",")]
    missing = [w for w in WANTED if w not in header]
    if missing:
        raise AutotuneLogError(f"not a Horovod autotune log: no column {', '.join(missing)}")
    try:
        rows = [_row({k: v.strip() for k, v in r.items() if k is not None})
                for r in csv.DictReader(lines[1:], fieldnames=header)]
    except (TypeError, ValueError, AttributeError) as exc:
        raise AutotuneLogError(f"malformed autotune log row: {exc}") from None
    if not rows:
        raise AutotuneLogError("autotune log has no scored sample (still warming up)")
    *tried, last = rows
    # Horovod's closing row repeats the best parameters tried, with their score.
    settled = any(last == s for s in tried) and last.score >= max(s.score for s in tried)
    if settled:
        return AutotuneLog(tuple(tried), last, True)
    return AutotuneLog(tuple(rows), max(rows, key=lambda s: s.score), False)


def read(path: str | Path) -> AutotuneLog:
    p = Path(path)
    try:
        return parse(p.read_text())
    except OSError as exc:
        raise AutotuneLogError(f"cannot read autotune log {p}: {exc.strerror}") from None


if __name__ == "__main__":
    log = read(sys.argv[1])
    print(f"{len(log.samples)} samples, settled={log.settled}, best={asdict(log.best)}")

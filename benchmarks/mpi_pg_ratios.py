"""Ratio table: the ddp-mpi allreduce (hvd_vs_ddp/backends/mpi_pg) against raw mpi4py Allreduce.

Reads results files written by the collectives suite (through the results format's own
loader), each holding the ddp-mpi allreduce cell and the raw mpi4py bar
(test_raw_mpi_allreduce) of ONE run, so that every ratio compares two measurements of the
same job. Prints, per group of
files, the median over runs (with min-max) of
  latency ratio  time_median(ddp-mpi) / time_median(raw)   at 4 B and 1 KiB
  busbw ratio    busbw(ddp-mpi) / busbw(raw)               at 256 KiB, 4 MiB, 64 MiB
and the medians of the absolute figures. Torch-free.

Make the files (repo root, 2 ranks; as root also export OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1), several runs per group, interleaved between groups:
    mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 python -m pytest \\
        suites/test_collectives.py -k "ddp-mpi and allreduce or raw_mpi" \\
        --backends ddp-mpi --max-bytes 67108864 -q -p no:cacheprovider \\
        --benchmark-json /tmp/mpipg-after-1.json
Then:
    python benchmarks/mpi_pg_ratios.py before='/tmp/mpipg-before-*.json' \\
        after='/tmp/mpipg-after-*.json'
"""
from __future__ import annotations

import argparse
import glob
import statistics
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))

from hvd_vs_ddp.results_schema import (  # noqa: E402
    CollectiveRecord,
    CollectiveSize,
    load_cell_results,
)

LATENCY_SIZES = (4, 1024)
BANDWIDTH_SIZES = (256 * 1024, 4 * 2**20, 64 * 2**20)


def _human(nbytes: int) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def _rows(path: str) -> tuple[dict[int, CollectiveSize], dict[int, CollectiveSize]]:
    """(ddp-mpi allreduce rows, raw mpi4py rows) by message size, from one results file."""
    found: dict[str, dict[int, CollectiveSize]] = {}
    for bench in load_cell_results(Path(path)).benchmarks:
        rec = bench.record
        if isinstance(rec, CollectiveRecord) and rec.op == "allreduce" \
                and rec.backend in ("ddp-mpi", "mpi4py-raw"):
            found[rec.backend] = {s.bytes: s for s in rec.sizes}
    missing = {"ddp-mpi", "mpi4py-raw"} - set(found)
    if missing:
        raise SystemExit(f"{path}: no {' or '.join(sorted(missing))} allreduce cell; run the "
                         "suite with -k \"ddp-mpi and allreduce or raw_mpi\" under mpirun")
    return found["ddp-mpi"], found["mpi4py-raw"]


def _median_time(size: CollectiveSize) -> float:
    """The suite's recorded median time, else the median of the recorded times."""
    return size.time_median if size.time_median is not None else statistics.median(size.times)


def run_figures(path: str) -> dict[str, float]:
    """Ratios and absolute figures of one run, keyed by row name."""
    pg, raw = _rows(path)
    out: dict[str, float] = {}
    for size in LATENCY_SIZES:
        if size in pg and size in raw:
            mine, bar = _median_time(pg[size]), _median_time(raw[size])
            out[f"latency {_human(size)}: pg/raw time"] = mine / bar
            out[f"latency {_human(size)}: pg us"] = mine * 1e6
            out[f"latency {_human(size)}: raw us"] = bar * 1e6
    for size in BANDWIDTH_SIZES:
        if size in pg and size in raw:
            out[f"busbw {_human(size)}: pg/raw"] = pg[size].busbw_gbps / raw[size].busbw_gbps
            out[f"busbw {_human(size)}: pg GB/s"] = pg[size].busbw_gbps
            out[f"busbw {_human(size)}: raw GB/s"] = raw[size].busbw_gbps
    return out


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    fmt = (lambda v: f"{v:.2f}") if med < 100 else (lambda v: f"{v:.0f}")
    return f"{fmt(med)} [{fmt(min(values))}-{fmt(max(values))}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("groups", nargs="+", metavar="LABEL=GLOB",
                    help="a label and a glob of JSON files (quote the glob)")
    args = ap.parse_args(argv)
    groups: dict[str, list[dict[str, float]]] = {}
    for spec in args.groups:
        label, _, pattern = spec.partition("=")
        files = sorted(glob.glob(pattern or label))
        if not files:
            raise SystemExit(f"{spec}: no file matches {pattern or label!r}")
        groups[label if pattern else "runs"] = [run_figures(f) for f in files]
    names = list(dict.fromkeys(k for runs in groups.values() for r in runs for k in r))
    width = max(len(n) for n in names) + 2
    cols = {label: [_cell([r[n] for r in runs if n in r]) for n in names]
            for label, runs in groups.items()}
    colw = {label: max(len(label) + 9, *(len(c) for c in cells))
            for label, cells in cols.items()}
    print("median [min-max] over runs; ratios compare ddp-mpi with raw mpi4py in one job")
    print(" " * width + "  ".join(f"{label} ({len(groups[label])} runs)".ljust(colw[label])
                                  for label in groups))
    for i, name in enumerate(names):
        print(name.ljust(width) + "  ".join(cols[label][i].ljust(colw[label])
                                            for label in groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())

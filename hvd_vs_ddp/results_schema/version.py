"""The format's name and version, and the version check every reader applies.

    from hvd_vs_ddp.results_schema.version import FORMAT, FORMAT_VERSION, check_version

Version history (docs/results-format.md, "Versioning"):
1. first format (2026-11-22).
2. one launcher vocabulary everywhere (results.launchers.LAUNCHERS): "horovodrun"
   became "horovodrun-gloo" / "horovodrun-mpi", the synthetic "local" became "single";
   memcpy benchmarks always carry backend "memcpy"; throughput step_times and
   samples_per_s are flat lists; convergence may carry reference_wall_times.
   Version-1 files are upgraded in memory when read (hvd_vs_ddp/results_schema/upgrade.py).
A newer version than FORMAT_VERSION is refused with one line.
"""
from __future__ import annotations

from typing import Any

from hvd_vs_ddp.common.output_formats import RUN_MANIFEST
from hvd_vs_ddp.results_schema.errors import ResultsError

FORMAT = RUN_MANIFEST  # also the output gate's name for a manifest (common/output_formats.py)
FORMAT_VERSION = 2


def check_version(version: Any, where: str, field: str = "format_version") -> int:
    """The version as an int, or a ResultsError naming where and the field."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultsError(f"{where}: {field} must be a positive integer, got {version!r}.")
    if version > FORMAT_VERSION:
        raise ResultsError(f"{where}: {field} {version} is newer than this reader reads "
                           f"({FORMAT_VERSION}); upgrade hvd-vs-ddp to read it.")
    return version

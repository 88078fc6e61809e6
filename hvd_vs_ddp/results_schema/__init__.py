"""results: the one owner of the hvd-vs-ddp results format (docs/results-format.md).

Every writer (suites, runner) builds these records and every reader (reports, the
CLI's --resume) loads files through them, so the format is defined once. Torch-free
and pandas-free (numpy only, for the frame builders' medians).

    from hvd_vs_ddp.results_schema import ThroughputRecord, Manifest, load_manifest
    benchmark.extra_info.update(ThroughputRecord(...).to_dict())   # a suite
    man, notes = load_manifest(Path("runs/x"))                     # a reader

Modules: version (FORMAT, FORMAT_VERSION, check_version), errors (ResultsError,
WriteError), io (read_json, write_json_atomic, write_files_atomic), fields (the record
base and its checks), kinds/ (one record per benchmark kind + the KINDS registry),
machine (MachineInfo), manifest (Manifest, CellEntry), launchers (the launcher
vocabulary), upgrade (v1 -> v2), files (load a run directory), summary (median, iqr).
"""
from __future__ import annotations

from hvd_vs_ddp.results_schema.errors import ResultsError, UnknownKind, WriteError
from hvd_vs_ddp.results_schema.files import (
                           CellResults,
                           NamedRecord,
                           load_cell_results,
                           load_manifest,
                           manifest_from_json,
                           results_from_json,
                           results_path,
)
from hvd_vs_ddp.results_schema.io import read_json, write_files_atomic, write_json_atomic
from hvd_vs_ddp.results_schema.kinds import (
                           KINDS,
                           OPS,
                           BenchmarkRecord,
                           CollectiveRecord,
                           CollectiveSize,
                           ComputeOnlyRecord,
                           ConvergenceRecord,
                           GanConvergenceRecord,
                           HorovodTimelineRecord,
                           MemcpyRecord,
                           RecoveryRecord,
                           ThroughputRecord,
                           TimeToAccuracyRecord,
                           record_from_dict,
)
from hvd_vs_ddp.results_schema.launchers import LAUNCHERS
from hvd_vs_ddp.results_schema.machine import MachineInfo
from hvd_vs_ddp.results_schema.manifest import STATUSES, CellEntry, Manifest, Repetition
from hvd_vs_ddp.results_schema.version import FORMAT, FORMAT_VERSION, check_version

__all__ = [
    "FORMAT", "FORMAT_VERSION", "KINDS", "LAUNCHERS", "OPS", "STATUSES", "BenchmarkRecord",
    "CellEntry", "CellResults", "CollectiveRecord", "CollectiveSize", "ComputeOnlyRecord",
    "ConvergenceRecord", "GanConvergenceRecord", "HorovodTimelineRecord", "MachineInfo",
    "Manifest", "MemcpyRecord", "NamedRecord", "RecoveryRecord", "Repetition", "ResultsError",
    "ThroughputRecord", "TimeToAccuracyRecord",
    "UnknownKind", "WriteError", "check_version", "load_cell_results", "load_manifest",
    "manifest_from_json", "read_json", "record_from_dict", "results_from_json", "results_path",
    "write_files_atomic", "write_json_atomic"]

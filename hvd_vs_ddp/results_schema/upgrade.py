"""Format version 1 -> 2, in memory, when a version-1 file is read (never on disk).

- Launchers: "horovodrun" becomes "horovodrun-gloo" / "horovodrun-mpi" (evidence, in
  order: the benchmark's backend_meta.controller, the manifest cell's launcher, the
  HOROVOD_* variables recorded in machine_info.env; see results.launchers); if nothing
  tells, "horovodrun" is kept and a note says so. "local" becomes "single". In a cell
  the manifest says "horovodrun-mpi" started, "mpirun" (what early version-1 writers
  saw under `horovodrun --mpi`, which starts its ranks through mpirun) becomes
  "horovodrun-mpi", so that old and new runs of the same cell match.
- memcpy benchmarks without backend get backend "memcpy".
- throughput / compute_only step_times and samples_per_s written nested per round
  ([[float]]) are flattened.
- Manifest fields the version-1 reader did not require default to null (cells: error,
  seconds, results, log; suites and pytest_args to [], knob_set to "default").

    doc, notes = upgrade_results(doc, cell_launcher="horovodrun-gloo")
    man, notes = upgrade_manifest(man)
"""
from __future__ import annotations

from typing import Any, Mapping

from hvd_vs_ddp.results_schema.launchers import resolve_legacy
from hvd_vs_ddp.results_schema.version import FORMAT_VERSION

_MANIFEST_NULL = ("command", "preset", "git_commit", "started", "finished", "complete",
                  "versions", "hardware", "env", "workloads", "knob_set", "hosts")
_CELL_DEFAULTS: dict[str, Any] = {
    "launcher": "", "suites": [], "pytest_args": [], "knob_set": "default",
    "error": None, "seconds": None, "results": None, "log": None}
_FLAT = ("step_times", "samples_per_s")


def upgrade_manifest(man: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A version-2 copy of a version-1 manifest (others are returned as they are)."""
    if man.get("format_version") != 1:
        return man, []
    out = dict(man, format_version=FORMAT_VERSION)
    for key in _MANIFEST_NULL:
        out.setdefault(key, None)
    if isinstance(man.get("cells"), list):
        out["cells"] = [_cell(c) if isinstance(c, dict) else c for c in man["cells"]]
    return out, []


def _cell(c: dict[str, Any]) -> dict[str, Any]:
    out = {**{k: (list(v) if isinstance(v, list) else v) for k, v in _CELL_DEFAULTS.items()},
           **c}
    out["launcher"], _ = resolve_legacy(out["launcher"])
    return out


def _launcher(name: Any, controller: Any, cell_launcher: Any,
              env: Mapping[str, Any]) -> tuple[Any, str | None]:
    if name in ("mpirun", "mpiexec") and cell_launcher == "horovodrun-mpi":
        return cell_launcher, None
    return resolve_legacy(name, controller, cell_launcher, env)


def _flat(x: Any) -> Any:
    if isinstance(x, list) and any(isinstance(v, list) for v in x):
        return [v for row in x for v in (row if isinstance(row, list) else [row])]
    return x


def upgrade_results(doc: dict[str, Any], cell_launcher: Any = None
                    ) -> tuple[dict[str, Any], list[str]]:
    """A version-2 copy of a version-1 pytest-benchmark JSON (others as they are).
    Expects doc["machine_info"]["hvd_vs_ddp"] and doc["benchmarks"] to exist."""
    machine = doc["machine_info"]["hvd_vs_ddp"]
    if machine.get("format_version") != 1:
        return doc, []
    notes: list[str] = []
    env = machine.get("env") if isinstance(machine.get("env"), dict) else {}
    machine = dict(machine, format_version=FORMAT_VERSION)
    if "launcher" in machine:
        machine["launcher"], note = _launcher(machine["launcher"], None, cell_launcher, env)
        notes += [f"machine_info.hvd_vs_ddp: {note}"] if note else []
    benches = []
    for bench in doc["benchmarks"]:
        info = bench.get("extra_info") if isinstance(bench, dict) else None
        if isinstance(info, dict):
            info = dict(info)
            meta = info["backend_meta"] if isinstance(info.get("backend_meta"), dict) else {}
            if "launcher" in info:
                info["launcher"], note = _launcher(info["launcher"], meta.get("controller"),
                                                   cell_launcher, env)
                if note:
                    notes.append(f"benchmark {bench.get('name')!r}: {note}")
            if info.get("kind") == "memcpy":
                info.setdefault("backend", "memcpy")
            if info.get("kind") in ("throughput", "compute_only"):
                info.update({k: _flat(info[k]) for k in _FLAT if k in info})
            bench = dict(bench, extra_info=info)
        benches.append(bench)
    mi = dict(doc["machine_info"], hvd_vs_ddp=machine)
    return dict(doc, machine_info=mi, benchmarks=benches), notes

"""Every refused input of the results format is one ResultsError line naming file and field.

NaN/inf in measurements, wrong types, missing fields, inconsistent lengths, values
outside their set, unknown kinds, newer versions, bad JSON; and through the real CLI
(`python -m hvd_vs_ddp.cli report`) one line `hvd-vs-ddp: error: ...` and exit 2. Also
the atomic writer and the torch/pandas-free import. Torch-free except the CLI runs.

    python -m pytest tests/unit/test_results_validate.py -q
"""
from __future__ import annotations

import copy
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp import results_schema as results
from hvd_vs_ddp.results_schema import (
    FORMAT,
    FORMAT_VERSION,
    ResultsError,
    UnknownKind,
    write_json_atomic,
)

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "runs" / "cpu-small"
GLOO_CELL = SMALL / "cells" / "ddp-gloo-torchrun-np2.json"


def _doc(kind: str = "") -> dict:
    cell = SMALL / "cells" / "compute-only-torchrun-np2.json" if kind == "compute_only" \
        else GLOO_CELL
    return json.loads(cell.read_text())


def _bench(doc: dict, kind: str) -> dict:
    return next(b for b in doc["benchmarks"] if b["extra_info"]["kind"] == kind)


def _refused(tmp_path: Path, doc: dict, *words: str) -> str:
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(doc))  # json writes NaN and Infinity as Python reads them
    with pytest.raises(ResultsError) as err:
        results.load_cell_results(path)
    msg = str(err.value)
    assert "\n" not in msg and isinstance(err.value, ValueError)
    for w in (str(path), *words):
        assert w in msg, msg
    return msg


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_measurements_name_file_benchmark_and_field(tmp_path, bad):
    doc = _doc()
    b = _bench(doc, "throughput")
    b["extra_info"]["step_times"][1] = bad
    _refused(tmp_path, doc, b["name"], "step_times[1]", "finite")


def test_non_finite_in_a_collective_size(tmp_path):
    doc = _doc()
    b = _bench(doc, "collective")
    b["extra_info"]["sizes"][2]["busbw_gbps"] = math.inf
    _refused(tmp_path, doc, b["name"], "sizes[2]", "busbw_gbps", "finite")


def test_non_finite_convergence_and_monitor(tmp_path):
    doc = _doc()
    b = _bench(doc, "convergence")
    b["extra_info"]["max_rel_dev"] = math.nan
    _refused(tmp_path, doc, b["name"], "max_rel_dev")
    doc = _doc()
    b = _bench(doc, "throughput")
    b["extra_info"]["monitor"]["ranks"][0]["cpu_percent"] = [math.nan]
    _refused(tmp_path, doc, "monitor.ranks[0].cpu_percent[0]")


@pytest.mark.parametrize("kind, field, value, words", [
    ("throughput", "per_rank_batch", "32", ["per_rank_batch", "str", "integer"]),
    ("throughput", "world_size", True, ["world_size", "integer"]),
    ("throughput", "knobs", [], ["knobs", "JSON object"]),
    ("throughput", "samples_per_s", [], ["samples_per_s", "non-empty"]),
    ("convergence", "within_tolerance", "yes", ["within_tolerance", "true or false"]),
    ("collective", "op", "reduce_scatter", ["op", "allreduce, broadcast, allgather"]),
    ("memcpy", "bytes", 1.5, ["bytes", "integer"]),
    ("time_to_accuracy", "seconds", None, ["seconds", "reached"]),
])
def test_wrong_types_and_values(tmp_path, kind, field, value, words):
    doc = _doc()
    b = _bench(doc, kind)
    b["extra_info"][field] = value
    _refused(tmp_path, doc, b["name"], *words)


@pytest.mark.parametrize("kind, field", [("throughput", "samples_per_s"),
                                         ("convergence", "reference_losses"),
                                         ("collective", "sizes"), ("memcpy", "bandwidth_gbps"),
                                         ("time_to_accuracy", "reached")])
def test_missing_fields(tmp_path, kind, field):
    doc = _doc()
    b = _bench(doc, kind)
    del b["extra_info"][field]
    _refused(tmp_path, doc, b["name"], f"lacks {field}")


def test_missing_field_of_a_size_row(tmp_path):
    doc = _doc()
    b = _bench(doc, "collective")
    del b["extra_info"]["sizes"][0]["correct"]
    _refused(tmp_path, doc, b["name"], "sizes[0] lacks correct")


@pytest.mark.parametrize("kind, field, words", [
    ("throughput", "samples_per_s", ["samples_per_s", "one per step_times"]),
    ("throughput", "rank_step_times", ["rank_step_times[0]", "steps"]),
    ("compute_only", "rank_step_times", ["rank_step_times[0]"]),
    ("convergence", "reference_losses", ["reference_losses", "like losses"]),
])
def test_inconsistent_lengths(tmp_path, kind, field, words):
    doc = _doc(kind)
    b = _bench(doc, kind)
    value = b["extra_info"][field]
    (value[0] if isinstance(value[0], list) else value).pop()
    _refused(tmp_path, doc, b["name"], *words)


def test_unknown_kind_is_a_results_error_and_a_report_note(tmp_path):
    with pytest.raises(UnknownKind) as err:
        results.record_from_dict({"kind": "latency"}, "x.json: benchmark 'b'")
    assert isinstance(err.value, ResultsError)
    assert "x.json: benchmark 'b'" in str(err.value) and "'latency'" in str(err.value)
    doc = _doc()
    doc["benchmarks"][0]["extra_info"]["kind"] = "latency"
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(doc))
    res = results.load_cell_results(path)
    assert len(res.benchmarks) == len(doc["benchmarks"]) - 1
    assert res.skipped and "latency" in res.skipped[0]


@pytest.mark.parametrize("where", ["machine", "manifest"])
def test_newer_version_is_refused(tmp_path, where):
    newer = FORMAT_VERSION + 1
    if where == "machine":
        doc = _doc()
        doc["machine_info"]["hvd_vs_ddp"]["format_version"] = newer
        _refused(tmp_path, doc, "machine_info.hvd_vs_ddp.format_version", str(newer), "newer")
    else:
        run = tmp_path / "run"
        run.mkdir()
        man = json.loads((SMALL / "manifest.json").read_text())
        (run / "manifest.json").write_text(json.dumps(dict(man, format_version=newer)))
        with pytest.raises(ResultsError, match=f"format_version {newer} is newer.*upgrade"):
            results.load_manifest(run)


@pytest.mark.parametrize("mutate, words", [
    (lambda m: m["cells"][0].update(status="done"), ["cells[0]", "status", "passed"]),
    (lambda m: m["cells"][1].update(id=m["cells"][0]["id"]), ["cells[1].id", "unique"]),
    (lambda m: m["cells"][0].pop("suites"), ["cells[0] lacks suites"]),
    (lambda m: m.update(complete="yes"), ["complete"]),
    (lambda m: m["cells"][0].update(seconds=math.nan), ["cells[0]", "seconds", "finite"]),
])
def test_bad_manifest_fields(tmp_path, mutate, words):
    run = tmp_path / "run"
    run.mkdir()
    man = json.loads((SMALL / "manifest.json").read_text())
    man.setdefault("hosts", None)  # version 1 runners did not write it; version 2 always does
    mutate(man)
    (run / "manifest.json").write_text(json.dumps(dict(man, format_version=FORMAT_VERSION)))
    with pytest.raises(ResultsError) as err:
        results.load_manifest(run)
    for w in (str(run / "manifest.json"), *words):
        assert w in str(err.value), str(err.value)


@pytest.mark.parametrize("content, words", [
    (b"", ["empty"]), (b'{"benchmarks": [', ["truncated"]), (b"\xff\xfe\x00", ["UTF-8"]),
    (b"nope", ["not JSON"]), (b'{"a": 1}', ["another tool"]),
    (b'{"benchmarks": [], "machine_info": {}}', ["machine_info.hvd_vs_ddp"]),
])
def test_bad_files(tmp_path, content, words):
    path = tmp_path / "cell.json"
    path.write_bytes(content)
    with pytest.raises(ResultsError) as err:
        results.load_cell_results(path)
    assert str(path) in str(err.value) and all(w in str(err.value) for w in words)


def test_a_writer_may_record_a_diverged_run_but_a_reader_refuses_it():
    rec = results.ConvergenceRecord(
        backend="ddp-gloo", world_size=2, launcher="torchrun", workload="mlp",
        losses=[1.0, math.nan], reference_losses=[1.0, 0.9], max_rel_dev=math.nan,
        tolerance=1e-4, within_tolerance=False)
    with pytest.raises(ResultsError, match=r"losses\[1\] is nan"):
        results.ConvergenceRecord.from_dict(rec.to_dict(), "f.json: benchmark 'c'")
    with pytest.raises(ResultsError, match="ConvergenceRecord: losses is"):
        results.ConvergenceRecord(backend="x", world_size=1, launcher="single", workload="w",
                                  losses="1.0", reference_losses=[1.0], max_rel_dev=0.0,
                                  tolerance=0.0, within_tolerance=True)


def test_unknown_fields_are_kept_and_may_not_shadow_declared_ones():
    info = copy.deepcopy(_bench(_doc(), "memcpy")["extra_info"])
    info["added_by_a_newer_writer"] = {"x": 1}
    rec = results.MemcpyRecord.from_dict(info)
    assert rec.extra == {"added_by_a_newer_writer": {"x": 1}} and rec.to_dict() == info
    with pytest.raises(ResultsError, match="repeats declared"):
        results.MemcpyRecord(backend="memcpy", world_size=1, launcher="single", bytes=4,
                             bandwidth_gbps=1.0, extra={"bytes": 8})


def test_atomic_write_replaces_whole_files_and_cleans_up(tmp_path):
    path = tmp_path / "manifest.json"
    doc = {"format": FORMAT, "a": 1}
    write_json_atomic(path, doc, kind=FORMAT, owner=path.parent)
    assert json.loads(path.read_text()) == doc
    with pytest.raises(TypeError):
        write_json_atomic(path, {"format": FORMAT, "a": object()}, kind=FORMAT,  # half way
                          owner=path.parent)
    assert json.loads(path.read_text()) == doc
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_results_imports_neither_torch_nor_pandas():
    code = ("import sys, hvd_vs_ddp.results_schema, hvd_vs_ddp.results_schema.files; "
            "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_every_kind_names_a_suite_of_the_matrix():
    from hvd_vs_ddp.harness.options import SUITES
    assert {cls.SUITE for cls in results.KINDS.values()} == set(SUITES)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", *args], cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300)


def _one_line_exit_2(proc: subprocess.CompletedProcess, *words: str) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_cli_report_on_a_corrupted_cell_names_file_and_field(tmp_path):
    """A NaN in one cell: the report is written without that cell (exit 3) and one
    warning line names the file and the field."""
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    cell = run / "cells" / GLOO_CELL.name
    doc = json.loads(cell.read_text())
    _bench(doc, "throughput")["extra_info"]["samples_per_s"][0] = math.nan
    cell.write_text(json.dumps(doc))
    proc = _cli("report", str(run), "-o", str(tmp_path / "out" / "r.html"), cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("hvd-vs-ddp: warning: unreadable")
    for word in (GLOO_CELL.name, "samples_per_s[0]", "finite"):
        assert word in lines[0], lines[0]
    assert (tmp_path / "out" / "r.html").is_file()


def test_cli_resume_of_an_invalid_manifest_is_one_line(tmp_path):
    run = tmp_path / "runs" / "earlier"
    shutil.copytree(SMALL, run)
    man = json.loads((run / "manifest.json").read_text())
    man["cells"][2]["world_size"] = "two"
    (run / "manifest.json").write_text(json.dumps(man))
    proc = _cli("run", "--resume", "runs/earlier", cwd=tmp_path)
    _one_line_exit_2(proc, "not a readable", "cells[2]", "world_size")


def test_ddp_stats_series_must_match_their_iterations(tmp_path):
    doc = _doc()
    b = _bench(doc, "throughput")
    b["extra_info"]["ddp_stats"] = {
        "sample_rate": 1, "bucket_sizes": [100],
        "ranks": [{"rank": 0, "iterations": [3, 4], "forward_compute_s": [0.1, 0.1],
                   "backward_compute_s": [0.2, 0.2], "backward_comm_s": [0.05],
                   "overlap_s": [0.04, 0.04], "backward_compute_end_ns": [1, 2],
                   "backward_comm_end_ns": [1, 2]}]}
    _refused(tmp_path, doc, b["name"], "ddp_stats.ranks[0].backward_comm_s",
             "one per iteration")
    b["extra_info"]["ddp_stats"]["ranks"][0]["backward_comm_s"] = [0.05, math.nan]
    _refused(tmp_path, doc, b["name"], "ddp_stats.ranks[0].backward_comm_s[1]", "finite")

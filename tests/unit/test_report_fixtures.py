"""Reports built from REAL recorded runs (tests/fixtures/runs/), checked against their inputs.

The fixtures were produced on this project's 2-core CPU machine by

    hvd-vs-ddp run --backends single,ddp-gloo,horovod --world-sizes 1,2 --workloads mlp \
        --suite-args "--rounds 3 --steps-per-round 2 --warmup-steps 1 --convergence-steps 5 \
        --max-bytes 65536" --name cpu-small --runs-dir tests/fixtures/runs
    hvd-vs-ddp run --backends ddp-gloo --world-sizes 2 --workloads mlp --suite-args \
        "--rounds 2 --steps-per-round 1 --test-time-limit 2" --name cpu-failed-cell \
        --runs-dir tests/fixtures/runs --allow-failures      # a real time-limit abort

Their numbers are small and noisy measurements; the tests check only that the
report says what the files say.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.reports import build_report
from hvd_vs_ddp.run_model.labels import backend_label

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
SMALL, FAILED = FIXTURES / "cpu-small", FIXTURES / "cpu-failed-cell"


def _benchmarks(run: Path, kind: str):
    for f in sorted((run / "cells").glob("*.json")):
        for b in json.loads(f.read_text())["benchmarks"]:
            if b["extra_info"]["kind"] == kind:
                yield b["extra_info"]


@pytest.fixture(scope="module")
def small_report(recorded_report):
    return recorded_report(SMALL.name)


def test_every_throughput_median_is_in_the_table(small_report):
    md = small_report.markdown.read_text()
    seen = 0
    for info in _benchmarks(SMALL, "throughput"):
        want = f"| {np.median(info['samples_per_s']):.1f} |"
        rows = [ln for ln in md.splitlines() if f"| {info['world_size']} |" in ln and want in ln]
        assert rows, f"{info['backend']} np{info['world_size']}: {want} not in the table"
        seen += 1
    assert seen == 6  # np1: single, ddp-gloo, horovod; np2: ddp-gloo, horovod (gloo), horovod (mpi)


def test_horovod_and_ddp_are_compared_with_a_verdict(small_report):
    md = small_report.markdown.read_text()
    answer = md.split("**Answer**")[1].split("## ")[0]
    line = next(ln for ln in answer.splitlines() if ln.startswith("- mlp at 2 ranks:"))
    assert "best Horovod / best DDP: " in line and "ratio " in line
    assert any(v in line for v in ("faster than", "equivalent within", "inconclusive"))
    assert "indicative only" in line  # one repetition: a within-run interval


def test_convergence_and_collectives_come_from_the_files(small_report):
    md = small_report.markdown.read_text()
    checked = 0
    for info in _benchmarks(SMALL, "convergence"):
        assert info["within_tolerance"]
        label = backend_label(info["backend"], info.get("backend_meta"))
        row = _row(md, f"| {info['workload']} | {label} | {info['world_size']} | "
                       f"{info['steps']} | {info['losses'][-1]:.4g} | "
                       f"{info['reference_losses'][-1]:.4g} | {info['max_rel_dev']:.3g} |")
        assert "| yes |" in row, row
        checked += 1
    assert checked, "no convergence result in the fixture"
    seen = 0
    for info in _benchmarks(SMALL, "collective"):
        label = backend_label(info["backend"], info.get("backend_meta"))
        row = _row(md, f"| {info['op']} | {label} | {info['world_size']} |")
        first = info["sizes"][0]  # 4 B, always among the sizes the table shows
        assert first["bytes"] == 4 and f"| {first['busbw_gbps']:.3g} |" in row, (first, row)
        assert row.rstrip().endswith("| yes |") == all(r["correct"] for r in info["sizes"]), row
        seen += 1
    assert seen == 9  # allreduce, broadcast, allgather x ddp-gloo, horovod (gloo), horovod (mpi)


def _row(md: str, cells: str) -> str:
    """The one table line of the report holding these consecutive cells."""
    rows = [ln for ln in md.splitlines() if cells in ln]
    assert len(rows) == 1, f"{len(rows)} rows hold {cells!r}"
    return rows[0]


def test_a_real_failed_cell_is_reported(recorded_report):
    manifest = json.loads((FAILED / "manifest.json").read_text())
    errors = [c["error"] for c in manifest["cells"] if c["status"] == "failed"]
    assert errors and all("is stuck in" in e for e in errors)
    paths = recorded_report(FAILED.name)
    html = paths.html.read_text()
    assert "Failed cells" in html and "is stuck in" in html


def test_before_after_from_two_real_runs(tmp_path):
    """Both runs named, each one's results under its own name: run A's throughput medians,
    run B's failed cells (it has nothing else), and the HTML carries the same tables."""
    paths = build_report([SMALL, FAILED], tmp_path / "ba.html")
    md, html = paths.markdown.read_text(), paths.html.read_text()
    assert "Run A: cpu-small" in md and "Run B: cpu-failed-cell" in md
    for info in _benchmarks(SMALL, "throughput"):
        want = f"| {np.median(info['samples_per_s']):.1f} |"
        assert any(ln.startswith("| cpu-small |") and want in ln for ln in md.splitlines()), want
    manifest = json.loads((FAILED / "manifest.json").read_text())
    for cell in manifest["cells"]:
        if cell["status"] != "passed":
            assert f"| cpu-failed-cell | {cell['id']} | {cell['status']} |" in md, cell["id"]
    assert not [ln for ln in md.splitlines() if ln.startswith("| cpu-failed-cell |")
                and "samples/s" in ln], "run B has no throughput and must show none"
    assert "cpu-small" in html and "cpu-failed-cell" in html and "Failed cells" in html


def test_cli_report_lists_a_corrupt_cell_as_unreadable_and_changes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    victim = next((run / "cells").glob("*.json"))
    victim.write_text(victim.read_text()[:200])  # truncated
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    out = tmp_path / "out" / "report.html"
    assert cli(["report", str(run), "-o", str(out)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hvd-vs-ddp: warning: unreadable")
    assert victim.name in err[0] and "truncated JSON" in err[0]
    assert out.is_file() and f"| {victim.stem} | unreadable |" in out.with_suffix(".md").read_text()
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_cli_report_refuses_a_corrupt_manifest_and_writes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    (run / "manifest.json").write_text((run / "manifest.json").read_text()[:300])
    out = tmp_path / "out" / "report.html"
    assert cli(["report", str(run), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hvd-vs-ddp: error:") and "manifest.json" in err[0]
    assert not (tmp_path / "out").exists()

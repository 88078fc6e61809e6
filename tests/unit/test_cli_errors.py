"""Bad input gets one clear line and exit code 2, and changes nothing.

Every case runs the real `hvd-vs-ddp` command in a subprocess.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launch import ROOT

SMALL = ROOT / "tests" / "fixtures" / "runs" / "cpu-small"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def snapshot(path: Path) -> dict:
    return {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def workdir(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(SMALL, runs / "earlier")
    (tmp_path / "images-empty" / "cat").mkdir(parents=True)  # a class with no image
    (tmp_path / "images-empty" / "cat" / "notes.txt").write_text("no image here")
    (tmp_path / "images-broken" / "cat").mkdir(parents=True)
    (tmp_path / "images-broken" / "cat" / "a.jpg").write_bytes(b"not a jpeg")
    (tmp_path / "cifar-partial" / "cifar-10-batches-py").mkdir(parents=True)
    (tmp_path / "cifar-partial" / "cifar-10-batches-py" / "data_batch_1").write_bytes(b"x")
    (tmp_path / "no-classes").mkdir()
    return tmp_path


def assert_one_line_exit_2(proc, *words):
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


RUN_CASES = [
    (["--backends", "nccl-typo"], ["unknown backend", "ddp-gloo"]),
    (["--workloads", "bert"], ["unknown workload", "resnet50"]),
    (["--preset", "huge"], ["unknown preset", "quick"]),
    (["--name", "../escape"], ["path separators"]),
    (["--name", "a/b"], ["path separators"]),
    (["--backends", "ddp-nccl", "--world-sizes", "2"], ["ddp-nccl", "GPU"]),
    (["--world-sizes", "0"], ["world size"]),
    (["--world-sizes", "two"], ["--world-sizes"]),
    (["--name", "earlier"], ["already exists"]),
    (["--resume", "runs/nothing-here"], ["no manifest.json"]),
    (["--data-dir", "no/such/images"], ["--data-dir", "no such directory"]),
    (["--repeat", "0"], ["--repeat", "integer >= 1"]),
    (["--repeat", "three"], ["--repeat", "integer >= 1"]),
    (["--repeat", "2.5"], ["--repeat", "integer >= 1"]),
    (["--order-seed", "x"], ["--order-seed"]),
    (["--resume", "runs/earlier", "--repeat", "4"], ["--repeat 4", "keeps its repetitions"]),
    (["--data-dir", "images-empty"], ["--data-dir", "holds no image"]),
    (["--data-dir", "images-broken"], ["--data-dir", "not a readable image"]),
    (["--data-dir", "cifar-partial"], ["--data-dir", "lacks", "data_batch_2"]),
    (["--data-dir", "no-classes"], ["--data-dir", "no class folders"]),
    (["--cell-time-limit", "-5"], ["--cell-time-limit", "> 0"]),
    (["--cell-time-limit", "inf"], ["--cell-time-limit", "> 0"]),
    (["--hosts", "bad_host:2"], ["--hosts", "not a host name"]),
    (["--hosts", "h1:0"], ["--hosts", "positive integer"]),
    (["--hosts", "h1:x"], ["--hosts", "positive integer"]),
    (["--hosts", "h1:2,h1:2"], ["--hosts", "named twice"]),
    (["--hosts", "h1:1"], ["--hosts", "fewer than the largest world size"]),
    (["--suite-args", "--rounds 0"], ["--rounds", ">= 1"]),
    (["--suite-args", "--rounds x"], ["--rounds", "invalid int"]),
    (["--suite-args", "--backends nope"], ["unknown backend"]),
    (["--suite-args", "--workload-param gpt:image_size=9"], ["no parameter"]),
    (["--suite-args", '"unbalanced'], ["--suite-args", "quotation"]),
    (["--bogus-option"], ["unrecognized arguments"]),
]


@pytest.mark.parametrize("args, words", RUN_CASES, ids=[" ".join(a) for a, _ in RUN_CASES])
def test_run_refuses_bad_input(workdir, args, words):
    if "ddp-nccl" in args:
        import torch
        if torch.cuda.device_count() >= 2:
            pytest.skip("this machine has the GPUs")
    before = snapshot(workdir)
    proc = cli("run", "--runs-dir", "runs", *args, cwd=workdir)
    assert_one_line_exit_2(proc, *words)
    assert snapshot(workdir) == before


def test_resume_of_a_corrupt_manifest(workdir):
    (workdir / "runs" / "earlier" / "manifest.json").write_text("{not json")
    before = snapshot(workdir)
    proc = cli("run", "--resume", "runs/earlier", cwd=workdir)
    assert_one_line_exit_2(proc, "not a readable")
    assert snapshot(workdir) == before


def _mutate_results(run: Path, how: str) -> None:
    f = next((run / "cells").glob("*.json"))
    text = f.read_text()
    if how == "empty":
        f.write_text("")
    elif how == "truncated":
        f.write_text(text[: len(text) // 2])
    elif how == "not-json":
        f.write_text("hello, world")
    elif how == "other-tool":
        f.write_text(json.dumps({"tool": "something else", "results": []}))
    elif how == "newer-format":
        data = json.loads(text)
        data["machine_info"]["hvd_vs_ddp"]["format_version"] = 99
        f.write_text(json.dumps(data))


@pytest.mark.parametrize("how", ["empty", "truncated", "not-json", "other-tool", "newer-format"])
def test_report_lists_bad_results_as_unreadable(workdir, how):
    """One bad cell file: the report is still written (exit 3), the cell listed as
    unreadable with one warning line; the run directory is untouched."""
    run = workdir / "runs" / "earlier"
    _mutate_results(run, how)
    before = snapshot(workdir / "runs")
    proc = cli("report", "runs/earlier", "-o", "out/report.html", cwd=workdir)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: warning: unreadable"), lines
    assert (workdir / "out" / "report.html").is_file()
    assert snapshot(workdir / "runs") == before


@pytest.mark.parametrize("margin", ["0", "1", "-0.05", "five", "nan"])
def test_report_refuses_bad_margin(workdir, margin):
    before = snapshot(workdir)
    proc = cli("report", "runs/earlier", "-o", "out/report.html", "--margin", margin,
               cwd=workdir)
    assert_one_line_exit_2(proc, "--margin", "between 0 and 1")
    assert snapshot(workdir) == before


def test_report_refuses_output_inside_results(workdir):
    before = snapshot(workdir)
    proc = cli("report", "runs/earlier", "-o", "runs/earlier/report.html", cwd=workdir)
    assert_one_line_exit_2(proc, "inside")
    assert snapshot(workdir) == before


def test_suites_refuse_unknown_backend(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "suites/", "--backends", "hvd",
                           "-p", "no:cacheprovider", "-q"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 4 and "unknown backend 'hvd'" in proc.stdout + proc.stderr

"""Your model, your data: workloads from outside the project through `hvd-vs-ddp run`.

- An external workload module kept under tests/ (tests/external/bench_workload.py, a
  residual MLP of its own), named by its file, runs at 1 and 2 ranks under torchrun and
  horovodrun (ddp-gloo and horovod; at 1 rank each in one process), its losses checked
  against the single-process reference by the convergence suite as for the built-in
  workloads, and reported: the report names it by its spec.
- A torchvision model by name (`torchvision:resnet18`) through the quick preset, and a
  transformers model by config name (`transformers:gpt2`) where transformers is
  installed (skipped with the reason otherwise; hvd-vs-ddp never requires it).

Kept small for CI: `-k` selects the external workload's tests only, one round of one
step, a few convergence steps, one repetition. The external workload module's run (the
first point) is in the extended tier: test_external_workload_extended.py.

    python -m pytest tests/system/test_external_workload.py -q
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp.workloads.external import slug
from tests.launch import ROOT

SPEC = "tests/external/bench_workload.py:make_workload"
SMALL = "--rounds 1 --steps-per-round 1 --warmup-steps 0 --convergence-steps 4 " \
        "--test-time-limit 300"


def cli(*args: str, cwd: Path = ROOT, timeout: float = 900) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def records(run: Path) -> list[dict]:
    out = []
    for f in sorted((run / "cells").glob("*.json")):
        doc = json.loads(f.read_text())
        if "benchmarks" in doc:
            out += [b["extra_info"] for b in doc["benchmarks"]]
    return out


def _explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"


def _one_cell(tmp_path: Path, workload: str, params: list[str]) -> Path:
    suite_args = " ".join([f"-k {slug(workload)}", SMALL,
                           *(f"--workload-param {workload}:{p}" for p in params)])
    proc = cli("run", "--runs-dir", str(tmp_path / "runs"), "--name", "zoo", "--preset",
               "quick", "--world-sizes", "1", "--workloads", workload, "--repeat", "1",
               "--suite-args", suite_args)
    assert proc.returncode == 0, _explain(proc)
    run = tmp_path / "runs" / "zoo"
    thr = [r for r in records(run) if r["kind"] == "throughput"]
    assert thr and {r["workload"] for r in thr} == {workload}, thr
    rep = cli("report", str(run), "-o", str(tmp_path / "out" / "report.html"))
    assert rep.returncode == 0, _explain(rep)
    assert workload in (tmp_path / "out" / "report.md").read_text()
    return run


@pytest.mark.multiproc
def test_a_torchvision_model_by_name_through_the_quick_preset(tmp_path):
    run = _one_cell(tmp_path, "torchvision:resnet18", ["image_size=32", "batch_size=4"])
    (rec,) = [r for r in records(run) if r["kind"] == "throughput"]
    assert rec["workload_params"]["image_size"] == 32 and rec["per_rank_batch"] == 4


@pytest.mark.multiproc
def test_a_transformers_model_by_config_name_where_installed(tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed here; "
                        "hvd-vs-ddp does not require it (pip install transformers)")
    run = _one_cell(tmp_path, "transformers:gpt2", ["seq_len=16", "layers=1"])
    (rec,) = [r for r in records(run) if r["kind"] == "throughput"]
    assert rec["workload_params"]["layers"] == 1 and rec["workload_params"]["seq_len"] == 16

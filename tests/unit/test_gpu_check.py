"""scripts/gpu_check.py on a machine without a GPU: every line skips with its reason, exit 0.

The GPU machine's own outcome lives in docs/gpu.md; here the check is that the one prepared
command stays runnable where CI runs (no GPU) and says why each line did not run, rather
than failing or passing silently.

    python -m pytest tests/unit/test_gpu_check.py -q
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.device_count() > 0


@pytest.mark.skipif(_has_gpu(), reason="a GPU is visible: the lines run instead (docs/gpu.md)")
def test_without_a_gpu_every_line_skips_saying_why(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/gpu_check.py"), "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = json.loads((tmp_path / "gpu_check.json").read_text())
    ids = {x["id"] for x in lines}
    # every kind of GPU line is in the table: the self-test's, compile, fidelity, NVML
    for want in ("selftest:ddp-nccl-1", "selftest:horovod-nccl-1", "selftest:amp-bf16",
                 "compile:ddp-nccl", "compile:horovod", "fidelity:b64:ddp:suite",
                 "fidelity:b256-bf16-nhwc:horovod:minimal", "fidelity:b32:suite/minimal",
                 "resnet50:horovod-synthetic", "nvml:energy"):
        assert want in ids, sorted(ids)
    for x in lines:
        assert x["status"] == "skip", x
        assert x["figure"].strip(), f"{x['id']} skipped without a reason"
    assert "| line" in proc.stdout and "0 failed" in proc.stdout


def test_a_missing_benchmark_path_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/gpu_check.py"),
                           "--horovod-benchmark", str(tmp_path / "nope.py")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such file" in proc.stderr


def test_an_unknown_part_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/gpu_check.py"),
                           "--parts", "fidelity,speed"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--parts" in proc.stderr

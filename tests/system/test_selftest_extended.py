"""The extended tier (tests/system/conftest.py: the tiers) of tests/system/test_selftest.py:
`hvd-vs-ddp doctor --selftest` whole on this machine (its table, every GPU line skipped
with its reason on a machine without a GPU, exit 0), and Horovod's channels_last training
with fp16 compression and gradient accumulation.

    python -m pytest tests/system/test_selftest_extended.py
"""
from __future__ import annotations

import pytest
import torch

from tests.launch import explain, horovod_available
from tests.system.test_selftest import CPU_CHECKS, _rows, _selftest, train_channels_last

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


@pytest.mark.slow
def test_selftest_runs_every_cpu_path_and_skips_gpu_lines_with_reasons():
    proc = _selftest(["--selftest"])
    assert proc.returncode == 0, explain(proc)
    rows = _rows(proc.stdout)
    assert proc.stdout.splitlines()[0].split()[:4] == ["check", "launcher", "result", "secs"]
    for title in CPU_CHECKS:
        assert title in rows, f"no row for {title}:\n{proc.stdout}"
        assert " PASS " in f" {rows[title]} " or " SKIP " in f" {rows[title]} ", rows[title]
    assert "PASS" in rows["single (cpu)"] and "PASS" in rows["ddp-gloo (cpu)"]
    if horovod_available()[0]:
        assert "PASS" in rows["horovod gloo (cpu)"], proc.stdout
    if not torch.cuda.is_available():
        gpu_rows = [r for t, r in rows.items() if t not in CPU_CHECKS]
        assert len(gpu_rows) >= 12, proc.stdout
        assert all("SKIP" in r and "no CUDA device visible" in r for r in gpu_rows), proc.stdout
    assert "selftest: " in proc.stdout.splitlines()[-1] and " 0 failed" in proc.stdout


@pytest.mark.horovod
@pytest.mark.parametrize("extra", [["--compression", "fp16", "--accumulation", "2"]],
                         ids=["fp16-compression-accumulation"])
def test_horovod_trains_a_channels_last_model(extra):
    train_channels_last(extra)

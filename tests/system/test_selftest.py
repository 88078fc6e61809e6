"""`hvd-vs-ddp doctor --selftest` on this machine, for real, and the GPU faults a CPU can reach.

- failures give exit 1: a real mpirun that cannot start (an unknown MPI component) and a
  launcher hidden from PATH while its check is asked for by name;
- an unknown check name: one error line, exit 2;
- NVML vs CUDA_VISIBLE_DEVICES: which GPU a CUDA index is (hvd_vs_ddp.harness.monitor);
- Horovod trains a channels_last model (it refused non-contiguous tensors; first seen on
  an H100, reproducible on the CPU);
- one NCCL library in a process with torch and Horovod; NCCL_*/HOROVOD_*/CUDA_*
  variables recorded with the results;
- ddp-nccl accepts a scheduler's GPU-per-rank binding; a preset on a one-GPU host keeps
  only the GPU cells that fit.

The whole selftest (its table, every GPU line skipped with its reason on a machine without
a GPU, exit 0) and Horovod's channels_last training with fp16 compression and accumulation
are in the extended tier: test_selftest_extended.py.

    python -m pytest tests/system/test_selftest.py
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.harness.monitor import visible_device
from tests.launch import ROOT, explain, horovod_available, launched

CPU_CHECKS = ("single (cpu)", "dp (cpu)", "ddp-gloo (cpu)", "ddp-mpi (cpu)",
              "horovod gloo (cpu)", "horovod mpi (cpu)")


def _selftest(args: list[str], env: dict[str, str] | None = None, timeout: float = 900):
    full_env = launchers.env()
    full_env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{full_env.get('PYTHONPATH', '')}"
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "doctor", *args],
                          cwd=ROOT, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


def _rows(stdout: str) -> dict[str, str]:
    """Table rows by check title -> the rest of the row."""
    rows = {}
    for line in stdout.splitlines():
        for status in (" PASS ", " FAIL ", " SKIP "):
            if status in line:
                title = line.split("  ")[0].strip()
                rows[title] = line[len(title):].strip()
    return rows


@pytest.mark.multiproc
def test_a_launch_that_fails_gives_exit_1_and_the_reason():
    if not launchers.available("mpirun"):
        pytest.skip("no mpirun here")
    proc = _selftest(["--selftest", "--only", "ddp-mpi"], {"OMPI_MCA_pml": "no-such-pml"},
                     timeout=300)
    assert proc.returncode == 1, explain(proc)
    row = _rows(proc.stdout)["ddp-mpi (cpu)"]
    assert "FAIL" in row and "exit " in row, proc.stdout
    assert "1 failed" in proc.stdout.splitlines()[-1]


def test_a_launcher_missing_from_path_fails_a_check_asked_for_by_name(tmp_path):
    # Only the venv's own bin directory: mpirun (a system tool) is gone.
    proc = _selftest(["--selftest", "--only", "ddp-mpi"],
                     {"PATH": os.path.dirname(sys.executable)}, timeout=300)
    assert proc.returncode == 1, explain(proc)
    row = _rows(proc.stdout)["ddp-mpi (cpu)"]
    assert "FAIL" in row and "mpirun not found" in row, proc.stdout


def test_unknown_check_is_one_error_line_and_exit_2():
    proc = _selftest(["--selftest", "--only", "no-such-check"], timeout=300)
    assert proc.returncode == 2, explain(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error: unknown selftest check "
                                                   "'no-such-check'; known"), proc.stderr
    assert "ddp-gloo" in lines[0]


@pytest.mark.parametrize("index, visible, expected", [
    (0, None, "0"), (1, None, "1"),
    (0, "3", "3"), (1, "4,6", "6"), (2, "4,6", None),
    (0, "GPU-aa11,GPU-bb22", "GPU-aa11"), (1, " 2 , 5 ", "5"),
])
def test_cuda_index_to_the_gpu_nvml_must_sample(index, visible, expected):
    """NVML ignores CUDA_VISIBLE_DEVICES: cuda:1 under "4,6" is the host's GPU 6."""
    assert visible_device(index, visible) == expected


@pytest.mark.multiproc
@pytest.mark.horovod
@pytest.mark.parametrize("extra", [[]], ids=["plain"])  # fp16, accumulation: the extended tier
def test_horovod_trains_a_channels_last_model(extra):
    train_channels_last(extra)


def train_channels_last(extra: list[str]) -> None:
    """Horovod trains ResNet-50 in channels_last at 2 ranks (with `extra` options)."""
    ok, why = horovod_available()
    if not ok:
        pytest.skip(f"horovod: {why}")
    proc = launched("horovodrun-gloo", 2, [
        "-m", "hvd_vs_ddp.cli.selftest_rank", "train", "--backend", "horovod", "--device", "cpu",
        "--workload", "resnet50", "--channels-last", "--steps", "2", *extra])
    assert proc.returncode == 0, explain(proc)
    assert "SELFTEST OK horovod x2" in proc.stdout, explain(proc)


def test_one_nccl_in_a_process_with_torch_and_horovod():
    """Horovod built by scripts/build_horovod.sh links torch's NCCL wheel: after importing
    both, exactly one libnccl is mapped (a second one would be a second NCCL runtime)."""
    code = ("import torch\n"
            "try:\n    import horovod.torch\nexcept ImportError:\n    pass\n"
            "from hvd_vs_ddp.harness.versions import loaded_nccl\n"
            "print(len(loaded_nccl()), loaded_nccl())")
    env = launchers.env()
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, explain(proc)
    count = int(proc.stdout.split()[0])
    assert count <= 1, proc.stdout
    if torch.version.cuda:
        assert count == 1, f"a CUDA torch maps its NCCL at import: {proc.stdout}"


def test_nccl_and_horovod_variables_are_recorded(monkeypatch):
    from hvd_vs_ddp.harness.versions import knob_env

    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    monkeypatch.setenv("HOROVOD_HIERARCHICAL_ALLREDUCE", "1")
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    env = knob_env()
    assert env["NCCL_P2P_DISABLE"] == "1" and env["HOROVOD_HIERARCHICAL_ALLREDUCE"] == "1"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and "NCCL_ALGO" in env


@pytest.mark.parametrize("local_size, gpus, visible, ok", [
    (2, 2, None, True), (4, 2, None, False), (1, 0, None, False),
    (4, 1, "3", True),        # Slurm --gpus-per-task=1: each rank sees its own GPU
    (4, 0, "", False),        # nothing visible at all
])
def test_ddp_nccl_accepts_a_gpu_per_rank_binding(local_size, gpus, visible, ok):
    from hvd_vs_ddp.backends.ddp import gpus_fit

    assert bool(gpus_fit(local_size, gpus, visible)) is ok


def test_a_preset_on_a_one_gpu_host_keeps_the_gpu_cells_that_fit(monkeypatch):
    """`run --preset full` on one GPU: ddp-nccl and horovod (NCCL) only at world size 1;
    it raised "ddp-nccl at world size 2 needs 2 GPUs" before. By name it still errors."""
    from hvd_vs_ddp.cli import matrix, presets

    monkeypatch.setattr(matrix, "_gpus", lambda: 1)  # the host's GPU count, nothing else
    cells = matrix.cells(presets.PRESETS["full"], world_sizes=[1, 2])
    sizes = {(c.backend, c.world_size) for c in cells}
    assert ("ddp-nccl", 1) in sizes and ("ddp-nccl", 2) not in sizes
    assert ("horovod", 1) in sizes and ("horovod", 2) not in sizes
    assert ("ddp-gloo", 2) not in sizes  # Gloo ranks would share the GPU
    assert ("ddp-gloo", 1) in sizes
    with pytest.raises(matrix.MatrixError, match="ddp-nccl at world size 2 needs 2 GPUs"):
        matrix.cells(presets.PRESETS["full"], ["ddp-nccl"], [2])

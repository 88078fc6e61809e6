"""What a result depends on: library versions, hardware and the knobs in the environment.

Cheap to call (no MPI initialisation, no GPU context beyond torch's own query).

    python -m hvd_vs_ddp.harness.versions
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from importlib import metadata
from typing import Any


def _pkg(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def mpi_version() -> str | None:
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.strip().splitlines()[0] if out.strip() else ""
    return first.replace("mpirun (", "").replace(")", "") or None


def versions() -> dict[str, Any]:
    import torch

    nccl = cudnn = driver = None
    if torch.cuda.is_available():
        try:
            nccl = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # torch built without NCCL
            nccl = None
        cudnn = str(torch.backends.cudnn.version())
        driver = gpu_driver()
    return {"python": platform.python_version(), "torch": torch.__version__,
            "torchvision": _pkg("torchvision"), "horovod": _pkg("horovod"),
            "mpi4py": _pkg("mpi4py"), "mpi": mpi_version(), "nccl": nccl,
            # the NCCL wheel torch (and a Horovod built by scripts/build_horovod.sh) loads
            "nccl_wheel": _pkg("nvidia-nccl-cu13") or _pkg("nvidia-nccl-cu12"),
            "cuda": torch.version.cuda, "cudnn": cudnn, "gpu_driver": driver,
            "nccl_loaded": loaded_nccl(),
            "hvd_vs_ddp": _pkg("hvd-vs-ddp")}


def loaded_nccl() -> list[str]:
    """The NCCL libraries mapped into this process (real paths). Two entries mean two
    NCCLs in one process (e.g. torch's wheel and a system libnccl Horovod was linked to)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {ln.split()[-1] for ln in fh if "libnccl" in ln and "/" in ln}
    except OSError:  # not Linux
        return []
    return sorted({os.path.realpath(p) for p in paths})


def gpu_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # no NVML (nvidia-ml-py) or no driver
        return None


def hardware() -> dict:
    import psutil
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1), "gpus": gpus,
            "platform": platform.platform()}


KNOB_ENV = ("OMP_NUM_THREADS", "HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME",
            "HOROVOD_CPU_OPERATIONS", "HOROVOD_GPU_OPERATIONS", "HOROVOD_CONTROLLER",
            "NCCL_ALGO", "NCCL_PROTO", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
            "CUDA_VISIBLE_DEVICES")


# Every variable with one of these prefixes that is set is recorded too: NCCL and
# Horovod read dozens (NCCL_IB_HCA, NCCL_P2P_DISABLE, NCCL_NET_GDR_LEVEL, ...).
KNOB_PREFIXES = ("NCCL_", "TORCH_NCCL_", "HOROVOD_", "CUDA_", "NVIDIA_VISIBLE_DEVICES",
                 "OMPI_MCA_", "UCX_")


def knob_env() -> dict[str, str | None]:
    out: dict[str, str | None] = {k: os.environ.get(k) for k in KNOB_ENV}
    out.update({k: v for k, v in sorted(os.environ.items()) if k.startswith(KNOB_PREFIXES)})
    return out


if __name__ == "__main__":
    print(json.dumps({"versions": versions(), "hardware": hardware(), "env": knob_env()},
                     indent=2))

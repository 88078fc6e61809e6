"""`hvd-vs-ddp doctor`: what can run on this machine, and precisely why not.

One line per backend (name, available or not, why), then launchers, the MPI
flavour and version, the Horovod build (controllers, tensor operations), GPUs
and the NCCL version.

    hvd-vs-ddp doctor
"""
from __future__ import annotations

from hvd_vs_ddp.backends import launchers, registry
from hvd_vs_ddp.harness import versions


def _horovod_line() -> str:
    try:
        from hvd_vs_ddp.backends.horovod import build_info

        info = build_info()
    except Exception as exc:  # not installed or broken
        return f"horovod    not usable: {exc}"
    controllers = ", ".join(info["controllers"]) or "none"
    return (f"horovod    {info['version']}: controllers {controllers}; "
            f"tensor ops {', '.join(info['tensor_ops']) or 'none'}")


def report_lines() -> list[str]:
    import torch

    lines = ["backends:"]
    lines += [f"  {ln}" for ln in registry.doctor_lines()]
    lines.append("launchers:")
    for name in launchers.NAMES:
        avail = launchers.available(name)
        lines.append(f"  {name:16s} {'available' if avail else 'unavailable'} "
                     f"{avail.reason}".rstrip())
    v = versions.versions()
    lines.append("libraries:")
    lines.append(f"  torch      {v['torch']} (CUDA {v['cuda'] or 'none'}, "
                 f"MPI backend built in: {torch.distributed.is_mpi_available()})")
    missing_mpi = "not found (apt-get install openmpi-bin libopenmpi-dev)"
    lines.append(f"  mpi        {v['mpi'] or missing_mpi}")
    lines.append(f"  mpi4py     {v['mpi4py'] or 'not installed'}")
    lines.append(f"  {_horovod_line()}")
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            lines.append(f"  gpu {i}      {torch.cuda.get_device_name(i)}")
        lines.append(f"  nccl       {v['nccl'] or 'not in this torch build'}")
    else:
        lines.append("  gpu        none visible (ddp-nccl and GPU tests are skipped)")
    return lines


if __name__ == "__main__":
    print("\n".join(report_lines()))

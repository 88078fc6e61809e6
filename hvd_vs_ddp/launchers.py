"""Command lines for every way of starting N ranks on this machine.

    launchers.command("torchrun", 2, ["-m", "pytest", "suites/"])
    -> [".../torchrun", "--nproc-per-node", "2", ..., "-m", "pytest", "suites/"]

Used by the matrix runner and by the tests. `env()` adds what the launchers need
here (Open MPI refuses root without two variables; oversubscription lets 4 ranks
share 2 cores). Every command is run with a time limit by the caller.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

LAUNCHERS = ("single", "torchrun", "mpirun", "horovodrun-gloo", "horovodrun-mpi")


class LauncherUnavailable(RuntimeError):
    pass


def _bin(name: str) -> str:
    """The executable beside this interpreter (the venv's), else on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        raise LauncherUnavailable(f"{name} not found beside {sys.executable} or on PATH")
    return found


def available(launcher: str) -> tuple[bool, str]:
    try:
        if launcher == "torchrun":
            _bin("torchrun")
        elif launcher == "mpirun":
            _bin("mpirun")
        elif launcher.startswith("horovodrun"):
            _bin("horovodrun")
            if launcher == "horovodrun-mpi":
                _bin("mpirun")
        elif launcher != "single":
            return False, f"unknown launcher {launcher!r}; known: {', '.join(LAUNCHERS)}"
    except LauncherUnavailable as exc:
        return False, str(exc)
    return True, ""


def command(launcher: str, nprocs: int, argv: list[str], python: str | None = None,
            hosts: str | None = None) -> list[str]:
    """argv is what follows `python` (e.g. ["-m", "pytest", ...])."""
    python = python or sys.executable
    if launcher == "single":
        if nprocs != 1:
            raise LauncherUnavailable(f"launcher 'single' runs 1 process, not {nprocs}")
        return [python, *argv]
    if launcher == "torchrun":
        return [_bin("torchrun"), "--standalone", "--nproc-per-node", str(nprocs),
                "--no-python", python, *argv]
    if launcher == "mpirun":
        extra = ["--host", hosts] if hosts else []
        return [_bin("mpirun"), "-np", str(nprocs), "--oversubscribe", "--bind-to", "none",
                *extra, python, *argv]
    if launcher in ("horovodrun-gloo", "horovodrun-mpi"):
        mode = "--gloo" if launcher.endswith("gloo") else "--mpi"
        host_args = ["-H", hosts] if hosts else ["-H", f"localhost:{nprocs}"]
        extra = ["--mpi-args=--oversubscribe --bind-to none"] if mode == "--mpi" else []
        return [_bin("horovodrun"), "-np", str(nprocs), mode, *host_args, *extra,
                python, *argv]
    raise LauncherUnavailable(f"unknown launcher {launcher!r}; known: {', '.join(LAUNCHERS)}")


def env(base: dict[str, str] | None = None, launcher: str | None = None) -> dict[str, str]:
    out = dict(os.environ if base is None else base)
    if launcher and launcher.startswith("horovodrun"):
        # horovodrun --mpi exports no HOROVOD_* variable; this tells the ranks who made them.
        out["HVD_VS_DDP_HOROVODRUN"] = "1"
    out.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    out.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    out.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # Launchers find the venv's python and tools first.
    out["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{out.get('PATH', '')}"
    out.setdefault("OMP_NUM_THREADS", "1")
    out.setdefault("PYTHONUNBUFFERED", "1")
    return out

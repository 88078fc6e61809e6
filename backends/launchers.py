"""The one launcher table: every way of starting ranks, and what each can start.

Each `Launcher` row holds the launcher's name (the one vocabulary used by env
detection, the matrix, results and reports), the executables it needs, whether its
ranks are MPI processes, the backends it can start at world size > 1, the backends the
comparison matrix runs under it, and how to build its command line. Backends'
`launch_fit`, the matrix, the runner, `doctor` and the tests all derive from it; a new
launcher is one row.

    python -m backends.launchers            # the table, with availability here
    command("torchrun", 2, ["-m", "pytest", "suites/"])
    -> [".../torchrun", "--standalone", "--nproc-per-node", "2", "--no-python", ...]
"""
from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from common.availability import Availability
from common.errors import UnknownName

# Variables an MPI library (Open MPI, MPICH/Hydra, PMIx under srun) sets in every rank.
MPI_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
DDP = ("ddp-gloo", "ddp-nccl")
ALL_DISTRIBUTED = ("ddp-gloo", "ddp-nccl", "ddp-mpi", "horovod")

Builder = Callable[[int, list[str], str, "str | None"], list[str]]


def mpi_ranks(environ: Mapping[str, str] | None = None) -> bool:
    """Were this process's ranks started by an MPI launcher (MPI_Init will find a job)?"""
    environ = os.environ if environ is None else environ
    return any(v in environ for v in MPI_RANK_VARS)


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


def _single(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    if n != 1:
        raise LauncherUnavailable(f"launcher 'single' runs 1 process, not {n}")
    return [python, *argv]


def _torchrun(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    return [_bin("torchrun"), "--standalone", "--nproc-per-node", str(n), "--no-python",
            python, *argv]


def _mpirun(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    extra = ["--host", hosts] if hosts else []
    return [_bin("mpirun"), "-np", str(n), "--oversubscribe", "--bind-to", "none", *extra,
            python, *argv]


def _mpiexec(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    extra = ["-hosts", hosts] if hosts else []
    return [_bin("mpiexec"), "-n", str(n), *extra, python, *argv]


def _horovodrun(mode: str) -> Builder:
    def build(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
        host_args = ["-H", hosts] if hosts else ["-H", f"localhost:{n}"]
        extra = ["--mpi-args=--oversubscribe --bind-to none"] if mode == "--mpi" else []
        return [_bin("horovodrun"), "-np", str(n), mode, *host_args, *extra, python, *argv]
    return build


@dataclass(frozen=True)
class Launcher:
    """One way of starting ranks."""

    name: str
    tools: tuple[str, ...]              # executables it needs
    mpi: bool                           # its ranks are MPI processes (srun: when PMI is on)
    starts: tuple[str, ...]             # backends it can start with more than one rank
    compares: tuple[str, ...] = ()      # backends the comparison matrix runs under it
    build: Builder | None = None        # None: not started by the runner (srun: sbatch)
    env: Mapping[str, str] = field(default_factory=dict)  # extra variables for its ranks
    how: str = ""                       # how a user starts it, for messages

    def available(self) -> Availability:
        if self.build is None:
            return Availability(False, f"{self.name} is started by the user ({self.how}), "
                                       "not by hvd-vs-ddp run")
        try:
            for tool in self.tools:
                _bin(tool)
        except LauncherUnavailable as exc:
            return Availability(False, str(exc))
        return Availability(True)

    def mpi_here(self, environ: Mapping[str, str] | None = None) -> bool:
        """Are this job's ranks MPI processes? (srun only with --mpi=pmix/pmi2.)"""
        return self.mpi or (self.name == "srun" and mpi_ranks(environ))


TABLE: dict[str, Launcher] = {row.name: row for row in (
    Launcher("single", (), False, (), build=_single, how="python -m pytest suites/"),
    Launcher("torchrun", ("torchrun",), False, DDP, compares=DDP, build=_torchrun,
             how="torchrun --nproc-per-node N -m pytest suites/"),
    Launcher("mpirun", ("mpirun",), True, ALL_DISTRIBUTED, compares=("ddp-mpi",),
             build=_mpirun, how="mpirun -np N python -m pytest suites/"),
    Launcher("mpiexec", ("mpiexec",), True, ALL_DISTRIBUTED, build=_mpiexec,
             how="mpiexec -n N python -m pytest suites/ (MPICH, Intel MPI)"),
    Launcher("srun", ("srun",), False, ALL_DISTRIBUTED, build=None,
             how="srun --mpi=pmix -n N python -m pytest suites/"),
    Launcher("horovodrun-gloo", ("horovodrun",), False, (*DDP, "horovod"),
             compares=("horovod",), build=_horovodrun("--gloo"),
             env={"HVD_VS_DDP_HOROVODRUN": "1"}, how="horovodrun -np N --gloo pytest suites/"),
    Launcher("horovodrun-mpi", ("horovodrun", "mpirun"), True, ALL_DISTRIBUTED,
             compares=("horovod",), build=_horovodrun("--mpi"),
             env={"HVD_VS_DDP_HOROVODRUN": "1"}, how="horovodrun -np N --mpi pytest suites/"),
)}
NAMES = tuple(TABLE)


def get(name: str) -> Launcher:
    try:
        return TABLE[name]
    except KeyError:
        raise UnknownName("launcher", name, NAMES) from None


def available(name: str) -> Availability:
    """Can `hvd-vs-ddp run` start this launcher here? (An unknown name: not available.)"""
    if name not in TABLE:
        return Availability(False, f"unknown launcher {name!r}; known: {', '.join(NAMES)}")
    return TABLE[name].available()


def fit(backend: str, launcher: str, world_size: int,
        environ: Mapping[str, str] | None = None) -> Availability:
    """Can `launcher` start `backend` at this world size? (Table facts only; a backend
    adds its own checks, such as Horovod's controllers or NCCL's GPUs.)"""
    if world_size == 1:
        return Availability(True)
    row = TABLE.get(launcher)
    if row is None or backend not in row.starts:
        able = [r.name for r in TABLE.values() if backend in r.starts]
        return Availability(False, f"{launcher} cannot start {backend} with {world_size} "
                                   f"ranks; use {' or '.join(able) or 'no launcher'}")
    return Availability(True)


def matrix_launchers(backend: str) -> tuple[str, ...]:
    """The launchers the comparison matrix runs `backend` under at world size > 1."""
    return tuple(r.name for r in TABLE.values() if backend in r.compares)


def command(launcher: str, nprocs: int, argv: list[str], python: str | None = None,
            hosts: str | None = None) -> list[str]:
    """argv is what follows `python` (e.g. ["-m", "pytest", ...])."""
    row = TABLE.get(launcher)
    if row is None or row.build is None:
        why = row.how if row else f"unknown launcher {launcher!r}; known: {', '.join(NAMES)}"
        raise LauncherUnavailable(why)
    return row.build(nprocs, argv, python or sys.executable, hosts)


def env(base: dict[str, str] | None = None, launcher: str | None = None) -> dict[str, str]:
    """The environment for a launcher's command on this machine."""
    out = dict(os.environ if base is None else base)
    if launcher in TABLE:
        out.update(TABLE[launcher].env)  # horovodrun --mpi exports no HOROVOD_* itself
    out.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    out.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    out.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # Launchers find the venv's python and tools first.
    out["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{out.get('PATH', '')}"
    out.setdefault("OMP_NUM_THREADS", "1")
    out.setdefault("PYTHONUNBUFFERED", "1")
    return out


if __name__ == "__main__":
    for row in TABLE.values():
        avail = row.available()
        print(f"{row.name:16s} mpi={'yes' if row.mpi else 'no ':3s} "
              f"starts={','.join(row.starts) or '-':36s} "
              f"{'available' if avail else 'unavailable: ' + avail.reason}")

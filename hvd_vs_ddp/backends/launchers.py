"""The one launcher table: every way of starting ranks, and what each can start.

Each `Launcher` row holds the launcher's name (the one vocabulary used by env
detection, the matrix, results and reports), the executables it needs, what its ranks
get (`provides`: "ranks" for any distributed launcher, "mpi" for MPI processes,
"horovod" where Horovod can start: its Gloo rendezvous or an MPI job), and how to build
its command line. A backend states what it `requires` and which launchers the comparison
matrix runs it under in its catalog row (hvd_vs_ddp/backends/catalog.py); `fit` matches
the two, so a new launcher is one row here and a new backend is one catalog row and one
class. Backends' `launch_fit`, the matrix, the runner, `doctor` and the tests all derive
from this table.

    python -m hvd_vs_ddp.backends.launchers            # the table, with availability here
    command("torchrun", 2, ["-m", "pytest", "suites/"])
    -> [".../torchrun", "--standalone", "--nproc-per-node", "2", "--no-python", ...]
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, MutableMapping

from hvd_vs_ddp.common.availability import Availability
from hvd_vs_ddp.common.errors import InputError, UnknownName

# Variables an MPI library (Open MPI, MPICH/Hydra, PMIx under srun) sets in every rank.
MPI_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
RANKS, MPI, HOROVOD = "ranks", "mpi", "horovod"  # what a launcher's ranks get
LAUNCHER_ENV = "HVD_VS_DDP_LAUNCHER"  # set by env(): which row started these ranks

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


def _spawn(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    if hosts:
        raise LauncherUnavailable("spawn starts every rank on this host; it takes no --hosts")
    return [python, "-m", "hvd_vs_ddp.harness.spawn_ranks", str(n), *argv]


def _mpirun(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    extra = ["--host", hosts] if hosts else []
    return [_bin("mpirun"), "-np", str(n), "--oversubscribe", "--bind-to", "none", *extra,
            python, *argv]


def _mpiexec(n: int, argv: list[str], python: str, hosts: str | None) -> list[str]:
    # Hydra names the lowest failed rank, not the first to die: each rank's guard says
    # which died first (hvd_vs_ddp/harness/rank_guard.py).
    extra = ["-hosts", hosts] if hosts else []
    return [_bin("mpiexec"), "-n", str(n), *extra, python, "-m", "hvd_vs_ddp.harness.rank_guard",
            python, *argv]


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
    provides: frozenset[str]            # RANKS, MPI, HOROVOD (srun: MPI and HOROVOD
                                        # only when started with --mpi=pmix/pmi2)
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

    def provides_here(self, environ: Mapping[str, str] | None = None) -> frozenset[str]:
        """What this job's ranks get; srun's ranks are MPI processes only with PMI."""
        if self.name == "srun" and mpi_ranks(environ):
            return self.provides | {MPI, HOROVOD}
        return self.provides

    @property
    def mpi(self) -> bool:
        return MPI in self.provides


ONE_PROCESS = "single"  # the launcher row of one process started without a launcher
_ANY, _MPI = frozenset({RANKS}), frozenset({RANKS, MPI, HOROVOD})
TABLE: dict[str, Launcher] = {row.name: row for row in (
    Launcher(ONE_PROCESS, (), frozenset(), build=_single, how="python -m pytest suites/"),
    Launcher("torchrun", ("torchrun",), _ANY,
             build=_torchrun, how="torchrun --nproc-per-node N -m pytest suites/"),
    Launcher("spawn", (), _ANY, build=_spawn,
             how="python -m hvd_vs_ddp.harness.spawn_ranks N -m pytest suites/ "
                 "(Lightning's ddp_spawn)"),
    Launcher("mpirun", ("mpirun",), _MPI, build=_mpirun,
             how="mpirun -np N python -m pytest suites/"),
    Launcher("mpiexec", ("mpiexec",), _MPI, build=_mpiexec,
             how="mpiexec -n N python -m pytest suites/ (MPICH, Intel MPI)"),
    Launcher("srun", ("srun",), _ANY, build=None,
             how="srun --mpi=pmix -n N python -m pytest suites/"),
    Launcher("horovodrun-gloo", ("horovodrun",), frozenset({RANKS, HOROVOD}),
             build=_horovodrun("--gloo"),
             env={"HVD_VS_DDP_HOROVODRUN": "1"}, how="horovodrun -np N --gloo pytest suites/"),
    Launcher("horovodrun-mpi", ("horovodrun", "mpirun"), _MPI,
             build=_horovodrun("--mpi"), env={"HVD_VS_DDP_HOROVODRUN": "1"},
             how="horovodrun -np N --mpi pytest suites/"),
)}
NAMES = tuple(TABLE)


def get(name: str) -> Launcher:
    try:
        return TABLE[name]
    except KeyError:
        raise UnknownName("launcher", name, NAMES) from None


def starts_ranks(name: str) -> bool:
    """Does this launcher start rank processes? ("single" does not: its one process is
    rank 0 itself.) An unknown name: assumed to."""
    row = TABLE.get(name)
    return row is None or RANKS in row.provides


def available(name: str) -> Availability:
    """Can `hvd-vs-ddp run` start this launcher here? (An unknown name: not available.)"""
    if name not in TABLE:
        return Availability(False, f"unknown launcher {name!r}; known: {', '.join(NAMES)}")
    return TABLE[name].available()


def fit(backend: str, requires: frozenset[str], launcher: str, world_size: int,
        environ: Mapping[str, str] | None = None) -> Availability:
    """Can `launcher` start `backend` (which needs `requires`) at this world size? Table
    facts only; a backend adds its own checks (Horovod's controllers, NCCL's GPUs)."""
    if world_size == 1:
        return Availability(True)
    row = TABLE.get(launcher)
    if row is not None and requires <= row.provides_here(environ):
        return Availability(True)
    able = [r.name for r in TABLE.values() if requires <= r.provides_here({})]
    return Availability(False, f"{launcher} cannot start {backend} with {world_size} ranks "
                               f"(it needs {', '.join(sorted(requires))}); use "
                               f"{' or '.join(able) or 'no launcher'}")


def matrix_launchers(backend: str, requires: frozenset[str],
                     named: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The launchers the comparison matrix runs `backend` under at world size > 1: those
    its catalog row names (`named`, in this table's order), else the first row that can
    start it."""
    named = tuple(r.name for r in TABLE.values() if r.name in named)
    if named:
        return named
    able = [r.name for r in TABLE.values() if r.build and requires and
            requires <= r.provides]
    return tuple(able[:1])


_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")  # judged whole: fullmatch


def parse_hosts(spec: str) -> list[tuple[str, int]]:
    """'h1:4,h2:4' -> [('h1', 4), ('h2', 4)] (slots default to 1); InputError if malformed."""
    out: list[tuple[str, int]] = []
    for part in spec.split(","):
        host, _, slots = part.strip().partition(":")
        if not _HOST.fullmatch(host):
            raise InputError(f"--hosts {spec!r}: {host!r} is not a host name; expected "
                             "HOST[:SLOTS],... e.g. h1:4,h2:4")
        try:
            n = int(slots) if slots else 1
        except ValueError:
            n = 0
        if n < 1:
            raise InputError(f"--hosts {spec!r}: slots of {host!r} must be a positive "
                             f"integer, got {slots!r}")
        if host in (h for h, _ in out):
            raise InputError(f"--hosts {spec!r}: {host!r} is named twice")
        out.append((host, n))
    return out


# Launchers that start every rank on this host whatever --hosts says (the runner's
# torchrun is --standalone): their cells never spread over hosts.
ONE_HOST_LAUNCHERS = (ONE_PROCESS, "torchrun", "spawn")

# What a rank on another host needs from the launching shell. Open MPI's mpirun starts
# remote ranks through ssh with the remote shell's environment: only `-x NAME` carries a
# variable there (Hydra's mpiexec and horovodrun forward the environment themselves).
EXPORT_PREFIXES = ("HVD_VS_DDP_", "NCCL_", "CUDA_", "HOROVOD_", "GLOO_", "TORCH_",
                   "PYTORCH_", "OMP_", "MKL_", "UCX_")
EXPORT_NAMES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONUNBUFFERED", "VIRTUAL_ENV",
                "MASTER_ADDR", "MASTER_PORT", "TORCHINDUCTOR_CACHE_DIR")


def exports(environ: Mapping[str, str]) -> list[str]:
    """`-x NAME` for each of `environ`'s variables a remote rank needs (sorted)."""
    names = sorted(n for n in environ if n in EXPORT_NAMES or n.startswith(EXPORT_PREFIXES))
    return [arg for n in names for arg in ("-x", n)]


def command(launcher: str, nprocs: int, argv: list[str], python: str | None = None,
            hosts: str | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """argv is what follows `python` (e.g. ["-m", "pytest", ...]); `environ`: the
    environment the command will run with (mpirun across --hosts exports from it)."""
    row = TABLE.get(launcher)
    if row is None or row.build is None:
        why = row.how if row else f"unknown launcher {launcher!r}; known: {', '.join(NAMES)}"
        raise LauncherUnavailable(why)
    cmd = row.build(nprocs, argv, python or sys.executable, hosts)
    if hosts and launcher == "mpirun":
        cmd[1:1] = exports(env(launcher=launcher) if environ is None else environ)
    return cmd


def forget_xdist_worker(environ: MutableMapping[str, str]) -> None:
    """Remove a pytest-xdist worker's PYTEST_XDIST_* variables from `environ` (in place).
    A rank's pytest is not a pytest-xdist worker, even when started inside one (a CI job's
    test session): pytest-benchmark sees PYTEST_XDIST_WORKER and disables itself
    (pytest_benchmark/session.py), and every throughput test then fails."""
    for name in [n for n in environ if n.startswith("PYTEST_XDIST_")]:
        del environ[name]


def env(base: dict[str, str] | None = None, launcher: str | None = None) -> dict[str, str]:
    """The environment for a launcher's command on this machine."""
    out = dict(os.environ if base is None else base)
    forget_xdist_worker(out)
    if launcher in TABLE:
        out.update(TABLE[launcher].env)  # horovodrun --mpi exports no HOROVOD_* itself
        out[LAUNCHER_ENV] = launcher  # the ranks report this row's name (backends/env.py)
    out.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    out.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    out.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # Launchers find the venv's python and tools first.
    out["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{out.get('PATH', '')}"
    out.setdefault("OMP_NUM_THREADS", "1")
    out.setdefault("PYTHONUNBUFFERED", "1")
    out["HVD_VS_DDP_LAUNCH_T0"] = repr(time.time())  # ranks measure start-up from here
    return out


if __name__ == "__main__":
    for row in TABLE.values():
        avail = row.available()
        print(f"{row.name:16s} provides={','.join(sorted(row.provides)) or '-':18s} "
              f"{'available' if avail else 'unavailable: ' + avail.reason}")

"""Who am I? Rank and topology from the launcher's environment variables.

One small class per launcher reads that launcher's variables; `detect()` tries
them in a fixed order and returns the first that matches, or a plain single
process (world size 1). Inconsistent variables (rank >= size, half of a pair)
raise `LauncherEnvError` naming the variables, so a broken launch fails loudly
instead of training with the wrong rank.

    python -m hvd_vs_ddp.backends.env          # print what this process sees

Supported: torchrun, horovodrun (Gloo controller sets HOROVOD_*: reported as
horovodrun-gloo; with --mpi the MPI variables are present and it is reported as
horovodrun-mpi), Open MPI's mpirun, MPICH / Intel MPI (PMI_*), Slurm's srun. The
names are the launcher table's (hvd_vs_ddp/backends/launchers.py): one vocabulary everywhere.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import ClassVar, Mapping, Sequence

from hvd_vs_ddp.backends.launchers import LAUNCHER_ENV, NAMES


class LauncherEnvError(RuntimeError):
    """The launcher's variables contradict each other."""


@dataclass(frozen=True)
class LauncherEnv:
    """What this process knows about the job it belongs to."""

    launcher: str
    rank: int
    world_size: int
    local_rank: int
    local_size: int
    node_rank: int
    master_addr: str | None = None
    master_port: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    def describe(self) -> str:
        return (f"launcher={self.launcher} rank={self.rank}/{self.world_size} "
                f"local={self.local_rank}/{self.local_size} node={self.node_rank}")


def _int(env: Mapping[str, str], name: str) -> int:
    raw = env[name]
    try:
        return int(raw)
    except ValueError:
        raise LauncherEnvError(f"{name}={raw!r} is not an integer") from None


class Detector:
    """Reads one launcher's variables. Subclasses set the names."""

    name: ClassVar[str]
    rank: ClassVar[str]
    size: ClassVar[str]
    local_rank: ClassVar[str | None] = None
    local_size: ClassVar[str | None] = None
    node_rank: ClassVar[str | None] = None
    # Variables whose presence alone says "this launcher made me".
    markers: ClassVar[Sequence[str]] = ()

    def matches(self, env: Mapping[str, str]) -> bool:
        return any(m in env for m in (self.rank, self.size, *self.markers))

    def read(self, env: Mapping[str, str]) -> LauncherEnv:
        missing = [v for v in (self.rank, self.size) if v not in env]
        if missing:
            present = [v for v in (self.rank, self.size) if v in env]
            raise LauncherEnvError(
                f"{self.name}: {', '.join(present) or 'launcher markers'} set but "
                f"{', '.join(missing)} missing; both {self.rank} and {self.size} are needed")
        rank, size = _int(env, self.rank), _int(env, self.size)
        if size < 1:
            raise LauncherEnvError(f"{self.name}: {self.size}={size} must be >= 1")
        if not 0 <= rank < size:
            raise LauncherEnvError(
                f"{self.name}: {self.rank}={rank} is out of range for {self.size}={size}")
        local_rank, local_size = self._local(env, rank, size)
        node_rank = self._node_rank(env, rank, local_size)
        return LauncherEnv(self.launcher_name(env), rank, size, local_rank, local_size,
                           node_rank, *self._master(env))

    def launcher_name(self, env: Mapping[str, str]) -> str:
        return self.name

    def _local(self, env: Mapping[str, str], rank: int, size: int) -> tuple[int, int]:
        lr_name, ls_name = self.local_rank, self.local_size
        has_lr = lr_name is not None and lr_name in env
        has_ls = ls_name is not None and ls_name in env
        if not has_lr and not has_ls:
            return rank, size  # launcher says nothing: assume one node
        if has_lr != has_ls and ls_name is not None:
            given, absent = (lr_name, ls_name) if has_lr else (ls_name, lr_name)
            raise LauncherEnvError(f"{self.name}: {given} set but {absent} missing")
        local_rank = _int(env, lr_name) if has_lr and lr_name else rank
        local_size = _int(env, ls_name) if has_ls and ls_name else size
        if not 0 <= local_rank < local_size:
            raise LauncherEnvError(
                f"{self.name}: {lr_name}={local_rank} is out of range for "
                f"{ls_name}={local_size}")
        if local_size > size:
            raise LauncherEnvError(
                f"{self.name}: {ls_name}={local_size} exceeds {self.size}={size}")
        return local_rank, local_size

    def _node_rank(self, env: Mapping[str, str], rank: int, local_size: int) -> int:
        if self.node_rank and self.node_rank in env:
            return _int(env, self.node_rank)
        return rank // max(local_size, 1)

    def _master(self, env: Mapping[str, str]) -> tuple[str | None, int | None]:
        return None, None


class TorchrunDetector(Detector):
    name = "torchrun"
    rank, size = "RANK", "WORLD_SIZE"
    local_rank, local_size, node_rank = "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"
    markers = ("TORCHELASTIC_RUN_ID",)

    def _master(self, env):
        addr, port = env.get("MASTER_ADDR"), env.get("MASTER_PORT")
        if (addr is None) != (port is None):
            raise LauncherEnvError(
                "torchrun: MASTER_ADDR and MASTER_PORT must be set together "
                f"(MASTER_ADDR={addr!r}, MASTER_PORT={port!r})")
        return addr, (_int(env, "MASTER_PORT") if port is not None else None)


class SpawnDetector(TorchrunDetector):
    """torch.multiprocessing.spawn from one parent (hvd_vs_ddp/harness/spawn_ranks.py): torchrun's
    variables, and a marker of its own."""

    name = "spawn"
    markers = ("HVD_VS_DDP_SPAWNED",)

    def matches(self, env):
        return "HVD_VS_DDP_SPAWNED" in env


class HorovodDetector(Detector):
    """horovodrun with the Gloo controller (it sets HOROVOD_* for every rank)."""

    name = "horovodrun-gloo"
    rank, size = "HOROVOD_RANK", "HOROVOD_SIZE"
    local_rank, local_size = "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE"
    node_rank = "HOROVOD_CROSS_RANK"


class OpenMPIDetector(Detector):
    name = "mpirun"
    rank, size = "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"
    local_rank, local_size = "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"
    node_rank = "OMPI_COMM_WORLD_NODE_RANK"

    def launcher_name(self, env):
        # horovodrun --mpi runs mpirun and forwards HOROVOD_* knobs it set itself.
        return "horovodrun-mpi" if is_under_horovodrun(env) else self.name


class PMIDetector(Detector):
    """MPICH's and Intel MPI's mpiexec (Hydra). Not srun --mpi=pmi2: Slurm's PMI-2 plugin
    sets PMI_FD, PMI_JOBID, PMI_RANK and PMI_SIZE but no local rank; that task is srun's
    (SlurmDetector: SLURM_LOCALID, SLURM_NODEID), or it would read as one node."""

    name = "mpiexec"
    rank, size = "PMI_RANK", "PMI_SIZE"
    local_rank, local_size = "MPI_LOCALRANKID", "MPI_LOCALNRANKS"

    def matches(self, env):
        return super().matches(env) and not started_by_srun(env)

    def launcher_name(self, env):
        return "horovodrun-mpi" if is_under_horovodrun(env) else self.name


class SlurmDetector(Detector):
    """srun: one task per rank. SLURM_STEP_ID tells an srun step from the batch shell."""

    name = "srun"
    rank, size = "SLURM_PROCID", "SLURM_NTASKS"
    local_rank = "SLURM_LOCALID"
    node_rank = "SLURM_NODEID"

    def matches(self, env):
        return "SLURM_STEP_ID" in env and ("SLURM_PROCID" in env or "SLURM_NTASKS" in env)

    def _local(self, env, rank, size):
        # SLURM_TASKS_PER_NODE looks like "2(x3),1": count tasks on this node instead.
        local_size = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
        node = _int(env, "SLURM_NODEID") if "SLURM_NODEID" in env else 0
        if local_size:
            per_node = _expand_tasks_per_node(local_size)
            local_size_n = per_node[min(node, len(per_node) - 1)]
        else:
            local_size_n = size
        local_rank = _int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else rank % local_size_n
        if not 0 <= local_rank < local_size_n:
            raise LauncherEnvError(
                f"srun: SLURM_LOCALID={local_rank} is out of range for {local_size_n} "
                "tasks on this node")
        return local_rank, local_size_n


def started_by_srun(env: Mapping[str, str]) -> bool:
    """Whether srun started this task itself (--mpi=pmi2, pmix or none), rather than an
    mpirun / mpiexec whose daemons srun started inside the allocation: then Slurm's task id
    is the MPI rank (under Hydra or Open MPI it is the node's proxy: SLURM_PROCID differs
    from PMI_RANK, and Hydra sets MPI_LOCALRANKID)."""
    if "SLURM_STEP_ID" not in env or "SLURM_PROCID" not in env:
        return False
    if "MPI_LOCALRANKID" in env or "OMPI_COMM_WORLD_RANK" in env:
        return False
    rank = env.get("PMI_RANK", env.get("PMIX_RANK"))
    return rank is None or rank == env["SLURM_PROCID"]


def _expand_tasks_per_node(spec: str) -> list[int]:
    """'2(x3),1' -> [2, 2, 2, 1]."""
    out: list[int] = []
    for part in spec.split(","):
        if "(x" in part:
            n, rep = part.rstrip(")").split("(x")
            out.extend([int(n)] * int(rep))
        else:
            out.append(int(part))
    return out


def is_under_horovodrun(env: Mapping[str, str]) -> bool:
    """horovodrun (Gloo or MPI) exports these to every rank it starts."""
    return any(k in env for k in ("HOROVOD_HOSTNAME", "HOROVOD_GLOO_RENDEZVOUS_ADDR",
                                  "HOROVOD_CONTROLLER", "HVD_VS_DDP_HOROVODRUN"))


SINGLE = LauncherEnv("single", 0, 1, 0, 1, 0)  # an in-process reference run

DETECTORS: tuple[Detector, ...] = (
    SpawnDetector(), TorchrunDetector(), HorovodDetector(), OpenMPIDetector(), PMIDetector(),
    SlurmDetector(),
)


def detect(env: Mapping[str, str] | None = None) -> LauncherEnv:
    """The launcher that started this process, or a single process."""
    env = os.environ if env is None else env
    for det in DETECTORS:
        if det.matches(env):
            found = det.read(env)
            row = env.get(LAUNCHER_ENV)  # started by hvd-vs-ddp: the table row's name
            if row in NAMES and row != "single":
                found = dataclasses.replace(found, launcher=row)
            return found
    return SINGLE


if __name__ == "__main__":
    print(detect().describe())

"""The topology table: launcher x GPUs per node x visible devices x ranks per node x nodes,
and where every rank must run (its host and physical GPU) or that the job is refused.

Each row is evaluated the way a real job is: for every rank, the variables its launcher
really sets (Slurm's srun with --mpi=none / pmi2 / pmix: SLURM_* plus the PMI plugin's
PMI_FD/PMI_JOBID/PMI_RANK/PMI_SIZE or PMIX_RANK/PMIX_NAMESPACE; Open MPI's mpirun:
OMPI_COMM_WORLD_* and PMIX_RANK; MPICH's Hydra: PMI_* and MPI_LOCALRANKID; horovodrun
--gloo: HOROVOD_*; torchrun and spawn: RANK/LOCAL_RANK/GROUP_RANK; an mpirun or mpiexec
inside a Slurm allocation also inherits its daemon step's SLURM_*), and CUDA_VISIBLE_DEVICES
as the visibility mode gives it, go through `env.detect`, then through the placement
module; the job is refused if any rank refuses or two ranks of one host land on one GPU.

    python -m tests.unit.topology            # print the table with every row's outcome

`evaluate(row, detect, device, refuse)` takes the three rules as arguments, so the same
table can be run against older code (on 56a4867, 11 of its 33 rows are wrong).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

# visibility: "all" (no CUDA_VISIBLE_DEVICES), "per-task" (srun --gpus-per-task: each
# task its own, SLURM_STEP_GPUS all of them), "slurm-all" (srun --gpus-per-node: every
# task sees all, CUDA_VISIBLE_DEVICES = SLURM_STEP_GPUS), "0,1" (a subset set by hand for
# every rank).


@dataclass(frozen=True)
class Row:
    launcher: str      # torchrun, spawn, mpirun, mpirun-in-slurm, mpiexec, mpiexec-in-slurm,
    #                    horovodrun-gloo, srun-none, srun-pmi2, srun-pmix
    gpus: int          # GPUs per node
    visible: str       # see above
    per_node: int      # ranks per node
    nodes: int
    nccl: bool         # the backend's transport is NCCL (else Gloo/MPI on the GPU)
    expected: str      # "n0:0 n0:1 n1:0 ..." (host:physical GPU of ranks 0..N-1) or "refuse"

    @property
    def id(self) -> str:
        t = "nccl" if self.nccl else "gloo"
        return (f"{self.launcher}-{self.gpus}gpu-{self.visible}-{self.per_node}x"
                f"{self.nodes}-{t}")


def _grid(nodes: int, per_node: int, gpu: Callable[[int], int]) -> str:
    return " ".join(f"n{n}:{gpu(lr)}" for n in range(nodes) for lr in range(per_node))


def _ok(nodes: int, per_node: int) -> str:
    return _grid(nodes, per_node, lambda lr: lr)


ROWS: tuple[Row, ...] = (
    # one node, every GPU visible: local rank = GPU
    Row("torchrun", 4, "all", 4, 1, True, _ok(1, 4)),
    Row("spawn", 2, "all", 2, 1, True, _ok(1, 2)),
    Row("mpirun", 8, "all", 8, 1, True, _ok(1, 8)),
    Row("horovodrun-gloo", 4, "all", 4, 1, True, _ok(1, 4)),
    Row("mpiexec", 4, "all", 4, 1, True, _ok(1, 4)),
    Row("srun-none", 4, "all", 4, 1, True, _ok(1, 4)),
    # several nodes, every GPU visible
    Row("torchrun", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("mpirun", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("mpirun-in-slurm", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("mpiexec", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("mpiexec-in-slurm", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("horovodrun-gloo", 8, "all", 8, 2, True, _ok(2, 8)),
    Row("srun-none", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("srun-pmi2", 4, "all", 4, 2, True, _ok(2, 4)),          # PMI-2's variables are srun's
    Row("srun-pmix", 4, "all", 4, 2, True, _ok(2, 4)),
    Row("srun-pmi2", 8, "all", 8, 4, True, _ok(4, 8)),          # PMI-2's variables are srun's
    # one GPU per task (srun --gpus-per-task=1): each task sees its own as cuda:0
    Row("srun-pmi2", 4, "per-task", 4, 2, True, _ok(2, 4)),
    Row("srun-pmix", 4, "per-task", 4, 2, True, _ok(2, 4)),
    Row("srun-none", 8, "per-task", 8, 1, True, _ok(1, 8)),
    # srun --gpus-per-node: every task sees all of them
    Row("srun-none", 4, "slurm-all", 4, 2, True, _ok(2, 4)),
    # more ranks than GPUs per node: refused (NCCL, and a CPU transport on the GPU too)
    Row("torchrun", 4, "all", 8, 1, True, "refuse"),
    Row("mpirun", 4, "all", 8, 2, True, "refuse"),
    Row("srun-none", 4, "slurm-all", 8, 1, True, "refuse"),   # CVD set, 8 on 4
    Row("srun-pmi2", 4, "slurm-all", 8, 2, True, "refuse"),
    Row("horovodrun-gloo", 4, "all", 8, 1, True, "refuse"),
    Row("torchrun", 1, "all", 2, 1, True, "refuse"),          # two NCCL ranks, one GPU
    Row("torchrun", 1, "all", 2, 1, False, "refuse"),         # gloo ranks sharing a GPU
    Row("mpirun", 2, "all", 4, 1, False, "refuse"),           # ddp-mpi ranks sharing a GPU
    Row("srun-pmi2", 4, "all", 8, 1, False, "refuse"),
    # a subset shown to every rank: its GPUs in order, refused if too few
    Row("torchrun", 4, "2,3", 2, 1, True, _grid(1, 2, lambda lr: lr + 2)),
    Row("mpirun", 8, "4,5,6,7", 4, 2, True, _grid(2, 4, lambda lr: lr + 4)),
    Row("torchrun", 4, "0,1", 4, 1, True, "refuse"),          # CVD set, 4 on 2
    Row("mpirun", 4, "0,1", 4, 1, False, "refuse"),
)


SLURM_HOSTS = "gpu[01-{n:02d}]"


def launcher_environ(row: Row, rank: int) -> dict[str, str]:
    """The variables rank `rank` of this row's job sees (GPU visibility included)."""
    n, per = row.nodes, row.per_node
    world = n * per
    node, local = divmod(rank, per)
    e: dict[str, str] = {}
    la = row.launcher
    if la in ("torchrun", "spawn"):
        e.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(local),
                 LOCAL_WORLD_SIZE=str(per), GROUP_RANK=str(node), GROUP_WORLD_SIZE=str(n),
                 ROLE_RANK=str(rank), MASTER_ADDR="n0", MASTER_PORT="29400",
                 TORCHELASTIC_RUN_ID="r1")
        if la == "spawn":
            e["HVD_VS_DDP_SPAWNED"] = "1"
    elif la in ("mpirun", "mpirun-in-slurm"):
        e.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(world),
                 OMPI_COMM_WORLD_LOCAL_RANK=str(local), OMPI_COMM_WORLD_LOCAL_SIZE=str(per),
                 OMPI_COMM_WORLD_NODE_RANK=str(node), OMPI_UNIVERSE_SIZE=str(world),
                 PMIX_RANK=str(rank), PMIX_NAMESPACE="prterun-n0-1@1")
    elif la in ("mpiexec", "mpiexec-in-slurm"):
        e.update(PMI_RANK=str(rank), PMI_SIZE=str(world), PMI_FD="6",
                 MPI_LOCALRANKID=str(local), MPI_LOCALNRANKS=str(per))
    elif la == "horovodrun-gloo":
        e.update(HOROVOD_RANK=str(rank), HOROVOD_SIZE=str(world),
                 HOROVOD_LOCAL_RANK=str(local), HOROVOD_LOCAL_SIZE=str(per),
                 HOROVOD_CROSS_RANK=str(node), HOROVOD_CROSS_SIZE=str(n),
                 HOROVOD_HOSTNAME=f"n{node}", HOROVOD_GLOO_RENDEZVOUS_ADDR="n0",
                 HOROVOD_GLOO_RENDEZVOUS_PORT="4000", HOROVOD_CONTROLLER="gloo")
    if la.endswith("-in-slurm"):  # the daemon (orted / hydra_pmi_proxy) step's variables
        e.update(_slurm(n, 1, node, 0, step="0"))
    elif la.startswith("srun-"):
        e.update(_slurm(n, per, node, local, step="0"))
        if la == "srun-pmi2":  # Slurm's mpi/pmi2 plugin (p_mpi_hook_slurmstepd_task)
            e.update(PMI_FD="5", PMI_JOBID="4242.0", PMI_RANK=str(rank), PMI_SIZE=str(world))
        elif la == "srun-pmix":  # Slurm's mpi/pmix plugin (PMIx server's setup_fork)
            e.update(PMIX_RANK=str(rank), PMIX_NAMESPACE="slurm.pmix.4242.0",
                     PMIX_SERVER_URI2="pmix-server.1;tcp4://127.0.0.1:4000",
                     PMIX_SERVER_TMPDIR="/var/spool/slurmd/pmix.4242.0")
    e.update(_visibility(row, local))
    return e


def _slurm(nodes: int, per: int, node: int, local: int, step: str) -> dict[str, str]:
    return {
        "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": step, "SLURM_STEPID": step,
        "SLURM_PROCID": str(node * per + local), "SLURM_LOCALID": str(local),
        "SLURM_NODEID": str(node), "SLURM_NTASKS": str(nodes * per),
        "SLURM_NPROCS": str(nodes * per), "SLURM_NNODES": str(nodes),
        "SLURM_STEP_NUM_TASKS": str(nodes * per), "SLURM_STEP_NUM_NODES": str(nodes),
        "SLURM_STEP_TASKS_PER_NODE": f"{per}(x{nodes})", "SLURM_TASKS_PER_NODE":
        f"{per}(x{nodes})", "SLURM_STEP_NODELIST": SLURM_HOSTS.format(n=nodes),
        "SLURMD_NODENAME": f"gpu{node + 1:02d}",
    }


def _visibility(row: Row, local: int) -> dict[str, str]:
    all_gpus = ",".join(str(i) for i in range(row.gpus))
    if row.visible == "all":
        return {}
    if row.visible == "per-task":
        return {"CUDA_VISIBLE_DEVICES": str(local % row.gpus), "SLURM_STEP_GPUS": all_gpus}
    if row.visible == "slurm-all":
        return {"CUDA_VISIBLE_DEVICES": all_gpus, "SLURM_STEP_GPUS": all_gpus}
    return {"CUDA_VISIBLE_DEVICES": row.visible}


def physical_names(environ: Mapping[str, str], gpus: int) -> tuple[str, ...]:
    """What the CUDA runtime on a node with `gpus` GPUs shows this process (indices)."""
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return tuple(str(i) for i in range(gpus))
    return tuple(v for v in raw.split(",") if v and int(v) < gpus)


# detect(environ) -> LauncherEnv; device(env, visible, environ, nccl) -> the index into
# `visible` this rank uses; refuse(env, visible, environ, nccl) -> a reason or None.
Detect = Callable[[Mapping[str, str]], object]
Device = Callable[[object, tuple, Mapping[str, str], bool], int]
Refuse = Callable[[object, tuple, Mapping[str, str], bool], "str | None"]


def evaluate(row: Row, detect: Detect, device: Device, refuse: Refuse,
             conflicts: Callable[[list[tuple[int, str, str, bool]]], "str | None"]
             | None = None) -> str:
    """The row's outcome under these rules: "n0:0 n0:1 ..." or "refuse: <why>". A rank's
    host is the node its launcher says it is on (detect's node_rank): a wrong node rank
    is a wrong host (the store dialled on the wrong machine, the wrong local GPU)."""
    out = []
    placed: list[tuple[int, str, str, bool]] = []
    for rank in range(row.nodes * row.per_node):
        environ = launcher_environ(row, rank)
        env = detect(environ)
        visible = physical_names(environ, row.gpus)
        why = refuse(env, visible, environ, row.nccl)
        if why:
            return f"refuse: {why}"
        true_node = rank // row.per_node
        gpu = visible[device(env, visible, environ, row.nccl)]
        host = f"n{env.node_rank}"
        placed.append((rank, f"n{true_node}", gpu, row.nccl))
        out.append(f"{host}:{gpu}")
    if conflicts is not None:
        why = conflicts(placed)
        if why:
            return f"refuse: {why}"
    return " ".join(out)


def matches(row: Row, outcome: str) -> bool:
    return outcome.startswith("refuse") if row.expected == "refuse" else outcome == row.expected


def current_rules() -> tuple[Detect, Device, Refuse, Callable]:
    """Today's rules: env.detect and hvd_vs_ddp.backends.placement."""
    from hvd_vs_ddp.backends import placement
    from hvd_vs_ddp.backends.env import detect

    def device(env, visible, environ, nccl):
        return placement.place(env, visible, "h", nccl).ordinal

    def refuse(env, visible, environ, nccl):
        return placement.refusal(env, visible, environ, nccl)

    def conflicts(placed):
        return placement.conflicts(placement.Placement(r, h, 0, 0, 1, 0, g, n)
                                   for r, h, g, n in placed)

    return detect, device, refuse, conflicts


def table(rules=None) -> list[tuple[Row, str, bool]]:
    rules = rules or current_rules()
    return [(row, out, matches(row, out)) for row in ROWS
            for out in [evaluate(row, *rules)]]


if __name__ == "__main__":
    for row, outcome, ok in table():
        print(f"{'ok  ' if ok else 'WRONG'} {row.id:40s} {outcome}")

"""Where each rank runs: its host, local rank, local size, node rank and GPU, in one place.

Every other module asks here; none computes a device from a local rank on its own.

- `visible_devices(environ, count)`: the physical GPUs this process sees, by the names
  CUDA_VISIBLE_DEVICES gives them (indices or UUIDs), else `0..count-1`.
- `place(env, visible, host)`: this rank's `Placement`: the CUDA ordinal it uses (the
  local rank where it sees at least as many GPUs as its host has ranks, else the local
  rank modulo what it sees: one GPU per task under Slurm's --gpus-per-task or a
  CUDA_VISIBLE_DEVICES per rank) and the physical GPU behind that ordinal.
- `conflicts(placements)`: the one rule, for a whole job: two ranks that train on the
  same physical GPU of one host are refused in one line, whatever the transport (NCCL
  fails with "Duplicate GPU detected"; Gloo or MPI would silently share it and the cost
  table would count its energy twice).
- `refusal(env, visible, ...)`: what one rank can tell alone before any process group
  exists (all GPUs shown to all ranks, and fewer GPUs than ranks on the host).
- `plan(hosts, world_size, gpus_per_host, visibility, on_gpu)`: the same placement
  computed up front for a cell, before any process starts (the runner and the matrix).
- `agree(store, placement)`: inside a rank, every rank's placement through the job's
  store (by GPU UUID where torch can read it), checked with `conflicts`; the launcher
  may have started the ranks directly (horovodrun, torchrun, mpirun, srun).

    python -m hvd_vs_ddp.backends.placement          # this process's placement
    python -m hvd_vs_ddp.backends.placement plan localhost:8 8 --gpus 4
"""
from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from hvd_vs_ddp.backends.env import LauncherEnv

VISIBILITIES = ("all", "per-task")  # or a subset: a comma-separated list shown to every rank


class PlacementError(RuntimeError):
    """A placement that would put two ranks on one GPU, or more ranks than GPUs."""


@dataclass(frozen=True)
class Placement:
    """One rank: where it runs. `gpu` names the physical GPU (CUDA_VISIBLE_DEVICES' name,
    or its UUID once torch has read it); `ordinal` is the cuda:N this process uses."""

    rank: int
    host: str
    node_rank: int
    local_rank: int
    local_size: int
    ordinal: int | None = None
    gpu: str | None = None
    nccl: bool = False

    def describe(self) -> str:
        where = f"cuda:{self.ordinal} (GPU {self.gpu})" if self.ordinal is not None else "cpu"
        return (f"rank {self.rank} on {self.host} (node {self.node_rank}, local "
                f"{self.local_rank}/{self.local_size}): {where}")

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Placement":
        return cls(**json.loads(text))


# Several "hosts" that are one machine (the recovery trials' localhost and 127.0.0.1):
# "localhost=0,1;127.0.0.1=2" gives each host name its own CUDA ordinals of this machine,
# and a rank takes its host's (its name: HOROVOD_HOSTNAME, or HOST_NAME_ENV).
HOST_GPUS_ENV = "HVD_VS_DDP_HOST_GPUS"
HOST_NAME_ENV = "HVD_VS_DDP_RECOVERY_HOST"


def visible_devices(environ: Mapping[str, str], count: int) -> tuple[str, ...]:
    """The names of the GPUs this process sees, in CUDA's order (at most `count`)."""
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return tuple(str(i) for i in range(count))
    names: list[str] = []
    for name in (n.strip() for n in raw.split(",")):
        if not name or name.startswith("-"):
            break  # CUDA stops at the first invalid entry ("-1" hides every GPU)
        names.append(name)
    return tuple(names[:count])


def host_share(environ: Mapping[str, str]) -> tuple[str, list[int]] | None:
    """(this rank's host name, its CUDA ordinals) where HOST_GPUS_ENV splits this machine
    between host names; None where it does not."""
    spec = environ.get(HOST_GPUS_ENV)
    if not spec:
        return None
    name = environ.get("HOROVOD_HOSTNAME") or environ.get(HOST_NAME_ENV)
    table = {h: [int(i) for i in gpus.split(",") if i]
             for h, _, gpus in (part.partition("=") for part in spec.split(";") if part)}
    if name not in table:
        raise PlacementError(f"{HOST_GPUS_ENV}={spec!r} gives no GPUs to host {name!r}")
    return name, table[name]


def split_hosts(hosts: Sequence[tuple[str, int]], gpus: int) -> str:
    """HOST_GPUS_ENV's value giving each of `hosts` (all on this machine) its own GPUs,
    in order; PlacementError where the machine has fewer GPUs than the hosts' slots."""
    need = sum(n for _, n in hosts)
    if need > gpus:
        raise PlacementError(f"{need} ranks on the hosts {', '.join(h for h, _ in hosts)} "
                             f"(all this machine) but {gpus} GPU(s): one GPU per rank")
    parts, start = [], 0
    for host, n in hosts:
        parts.append(f"{host}={','.join(str(i) for i in range(start, start + n))}")
        start += n
    return ";".join(parts)


def place(env: LauncherEnv, visible: Sequence[str], host: str | None = None,
          nccl: bool = False) -> Placement:
    """This rank's placement; no GPU (`visible` empty) is the CPU."""
    host = host or socket.gethostname()
    if not visible:
        return Placement(env.rank, host, env.node_rank, env.local_rank, env.local_size)
    ordinal = env.local_rank if len(visible) >= env.local_size \
        else env.local_rank % len(visible)
    return Placement(env.rank, host, env.node_rank, env.local_rank, env.local_size,
                     ordinal, visible[ordinal], nccl)


def refusal(env: LauncherEnv, visible: Sequence[str], environ: Mapping[str, str],
            nccl: bool) -> str | None:
    """What one rank can refuse alone: its host's ranks see the same GPUs (none hidden per
    rank) and there are fewer of them than ranks. A CUDA_VISIBLE_DEVICES that may differ
    per rank is judged by `agree` once every rank has said which GPU it took."""
    if not visible or len(visible) >= env.local_size:
        return None
    if not shared_visibility(environ, visible):
        return None
    what = "NCCL needs one GPU per rank" if nccl else (
        "a rank on a GPU another rank uses would share it (CUDA_VISIBLE_DEVICES= trains "
        "on the CPU)")
    return (f"{env.local_size} ranks on this host but {len(visible)} GPU(s) visible to "
            f"each: {what}")


def shared_visibility(environ: Mapping[str, str], visible: Sequence[str]) -> bool:
    """Whether every rank of this host sees these same GPUs: CUDA_VISIBLE_DEVICES unset, or
    set to all of Slurm's GPUs of this step on this node (SLURM_STEP_GPUS / SLURM_JOB_GPUS)."""
    if "CUDA_VISIBLE_DEVICES" not in environ:
        return True
    node_gpus = environ.get("SLURM_STEP_GPUS") or environ.get("SLURM_JOB_GPUS")
    if node_gpus:
        return tuple(g.strip() for g in node_gpus.split(",") if g.strip()) == tuple(visible)
    return False


def conflicts(placements: Iterable[Placement]) -> str | None:
    """The first GPU that two ranks of one host would train on, as a one-line refusal."""
    users: dict[tuple[str, str], list[Placement]] = {}
    for p in placements:
        if p.gpu is not None:
            users.setdefault((p.host, p.gpu), []).append(p)
    for (host, gpu), ps in users.items():
        if len(ps) > 1:
            ranks = ", ".join(str(p.rank) for p in sorted(ps, key=lambda p: p.rank))
            why = "NCCL needs one GPU per rank ('Duplicate GPU detected')" \
                if any(p.nccl for p in ps) else \
                "two ranks would share it and its time and energy (CUDA_VISIBLE_DEVICES= " \
                "trains on the CPU)"
            return f"ranks {ranks} on {host} would all train on GPU {gpu}: {why}"
    return None


def plan(hosts: Sequence[tuple[str, int]], world_size: int, gpus_per_host: int,
         visibility: str = "all", on_gpu: bool = True, nccl: bool = False
         ) -> list[Placement]:
    """Every rank's placement for a job started over `hosts` (name, slots), filled in
    order as mpirun, horovodrun and torchrun's nodes do. `visibility`: "all" (every rank
    sees every GPU of its host), "per-task" (each rank sees its own GPU), or a
    comma-separated subset shown to every rank. Raises PlacementError with one line."""
    if world_size < 1:
        raise PlacementError(f"world size must be >= 1, got {world_size}")
    slots = sum(n for _, n in hosts)
    if slots < world_size:
        raise PlacementError(f"{world_size} ranks but {slots} slot(s) on "
                             f"{', '.join(f'{h}:{n}' for h, n in hosts)}")
    per_host: list[tuple[str, int]] = []
    left = world_size
    for host, n in hosts:
        if left <= 0:
            break
        per_host.append((host, min(n, left)))
        left -= min(n, left)
    out: list[Placement] = []
    rank = 0
    for node, (host, local_size) in enumerate(per_host):
        if on_gpu and gpus_per_host < 1:
            raise PlacementError(f"{host}: no GPU for the {local_size} rank(s) placed there")
        for local in range(local_size):
            env = LauncherEnv("plan", rank, world_size, local, local_size, node)
            visible = _visible_for(visibility, local, gpus_per_host) if on_gpu else ()
            if on_gpu and not visible:
                raise PlacementError(f"{host}: rank {rank} (local {local}) would see no GPU "
                                     f"({gpus_per_host} on the host, {visibility})")
            # a rank alone refuses only all GPUs shown to all; a subset or one GPU per
            # task is judged by `conflicts` over every rank, as `agree` does at run time
            shown = {} if visibility == "all" else {"CUDA_VISIBLE_DEVICES": ",".join(visible)}
            why = refusal(env, visible, shown, nccl)
            if why:
                raise PlacementError(f"{host}: {why}")
            out.append(place(env, visible, host, nccl))
            rank += 1
    why = conflicts(out)
    if why:
        raise PlacementError(why)
    return out


def _visible_for(visibility: str, local: int, gpus: int) -> tuple[str, ...]:
    if visibility == "all":
        return tuple(str(i) for i in range(gpus))
    if visibility == "per-task":
        return (str(local % gpus),) if gpus else ()
    subset = tuple(v.strip() for v in visibility.split(",") if v.strip())
    bad = [v for v in subset if not v.isdigit() or int(v) >= gpus]
    if bad:
        raise PlacementError(f"visible devices {visibility!r}: {', '.join(bad)} not among "
                             f"the host's {gpus} GPU(s)")
    return subset


def _replace(p: Placement, **kw: Any) -> Placement:
    return Placement(**{**asdict(p), **kw})


def gpu_uuid(ordinal: int) -> str | None:
    """The physical identity of cuda:`ordinal` (torch's device UUID), or None."""
    import torch

    try:
        return "GPU-" + str(torch.cuda.get_device_properties(ordinal).uuid)
    except (AttributeError, RuntimeError, AssertionError):
        return None


def here(env: LauncherEnv, on_gpu: bool, nccl: bool = False,
         environ: Mapping[str, str] | None = None) -> Placement:
    """This process's placement, the GPU named by its UUID where torch can read it.
    Raises PlacementError where this rank alone can tell the host has too few GPUs."""
    environ = os.environ if environ is None else environ
    if not on_gpu:
        return place(env, ())
    import torch

    p = place_in(env, environ, torch.cuda.device_count(), nccl)
    uuid = gpu_uuid(p.ordinal) if p.ordinal is not None else None
    return _replace(p, gpu=uuid) if uuid else p


def place_in(env: LauncherEnv, environ: Mapping[str, str], count: int, nccl: bool,
             host: str | None = None) -> Placement:
    """`place` for a process that sees `count` CUDA devices under `environ` (its
    CUDA_VISIBLE_DEVICES, and its host's share of the machine: HOST_GPUS_ENV); the
    ordinal is the process's own cuda:N. PlacementError where it alone can refuse."""
    everything = visible_devices(environ, count)
    visible, ordinals = everything, list(range(len(everything)))
    share = host_share(environ)
    if share:  # this "host" is a share of this machine's GPUs
        ordinals = [i for i in share[1] if i < len(everything)]
        visible = tuple(everything[i] for i in ordinals)
    why = refusal(env, visible, environ if not share else {}, nccl)
    if why:
        raise PlacementError(why)
    p = place(env, visible, host, nccl)
    return p if p.ordinal is None else _replace(p, ordinal=ordinals[p.ordinal])


def device_for(env: LauncherEnv, device: str, needs_gpu: bool, nccl: bool,
               what: str = "this backend") -> tuple[Any, Placement]:
    """(torch.device, Placement) for a rank of `env` under the backend option `device`
    ("auto" or "cpu"): the CPU where asked or where no GPU is visible, else the GPU
    `here` gives. Raises PlacementError (one line) where it would share a GPU."""
    import torch

    on_gpu = device != "cpu" and torch.cuda.is_available()
    if not on_gpu and needs_gpu:
        raise PlacementError(f"{what}: no CUDA device visible")
    p = here(env, on_gpu, nccl)
    return (torch.device("cuda", p.ordinal) if p.ordinal is not None
            else torch.device("cpu")), p


_AGREEMENTS = 0


def agree_in_store(job_store: Any, mine: Placement, world_size: int,
                   timeout_s: float = 300.0) -> list[Placement]:
    """`agree` under a fresh prefix of the job's store (every rank calls it in the same
    order: once per backend setup)."""
    from torch.distributed import PrefixStore

    global _AGREEMENTS
    _AGREEMENTS += 1
    return agree(PrefixStore(f"hvd_vs_ddp/placement{_AGREEMENTS}", job_store), mine,
                 world_size, timeout_s)


def agree(store: Any, mine: Placement, world_size: int, timeout_s: float = 300.0
          ) -> list[Placement]:
    """Every rank's placement, exchanged through `store` (a torch.distributed Store that
    every rank of the job reaches) and checked with `conflicts` on every rank alike, so
    that all refuse together. Raises PlacementError naming the shared GPU."""
    import datetime

    if hasattr(store, "set_timeout"):
        store.set_timeout(datetime.timedelta(seconds=timeout_s))
    store.set(f"placement/{mine.rank}", mine.as_json())
    everyone = [Placement.from_json(store.get(f"placement/{r}")) for r in range(world_size)]
    why = conflicts(everyone)
    if why:
        raise PlacementError(why)
    return everyone


def _main(argv: list[str]) -> int:
    import sys

    if argv[:1] == ["plan"]:
        import argparse

        from hvd_vs_ddp.backends.launchers import parse_hosts
        from hvd_vs_ddp.common.errors import InputError

        ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.backends.placement plan")
        ap.add_argument("hosts")
        ap.add_argument("world_size", type=int)
        ap.add_argument("--gpus", type=int, default=0, help="GPUs per host")
        ap.add_argument("--visible", default="all", help="all, per-task or a subset: 0,1")
        ap.add_argument("--nccl", action="store_true")
        a = ap.parse_args(argv[1:])
        try:
            for p in plan(parse_hosts(a.hosts), a.world_size, a.gpus, a.visible,
                          on_gpu=a.gpus > 0, nccl=a.nccl):
                print(p.describe())
        except (PlacementError, InputError) as exc:
            print(f"placement: refused: {exc}", file=sys.stderr)
            return 2
        return 0
    import torch

    from hvd_vs_ddp.backends.env import detect

    print(here(detect(), torch.cuda.is_available()).describe())
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))

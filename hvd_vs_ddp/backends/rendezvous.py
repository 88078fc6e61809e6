"""Where do the ranks of a torch.distributed job meet?

torchrun exports MASTER_ADDR/MASTER_PORT; horovodrun, mpirun and srun do not.
Then rank 0 opens a TCPStore on a port the kernel picks (port 0: no fixed
numbers, so two jobs on one machine never collide) and shares host and port
with the other ranks through whatever channel the launcher offers:

- mpirun / mpiexec / horovodrun --mpi: an MPI broadcast (mpi4py);
- horovodrun --gloo: Horovod's own rendezvous key-value server;
- srun: no channel, so host and port are derived from the job and step ids.

`job_store(env, timeout)` is that store (one per process); `store_for` gives each
init_process_group a fresh prefix of it.
"""
from __future__ import annotations

import atexit
import ctypes
import datetime
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Callable

from torch.distributed import PrefixStore, Store, TCPStore

from hvd_vs_ddp.backends.env import LauncherEnv
from hvd_vs_ddp.backends.launchers import mpi_ranks

Exchange = Callable[[object], object]  # rank 0's value in, everybody's copy out


class RendezvousError(RuntimeError):
    pass


def _local_address(env: LauncherEnv, toward: str | None = None) -> str:
    """Rank 0's address as the other ranks should dial it (the first of `addresses`)."""
    return addresses(env, toward)[0]


def addresses(env: LauncherEnv, toward: str | None = None, resolved: str | None = None,
              interfaces: list[str] | None = None) -> list[str]:
    """Rank 0's candidate addresses, best first: HVD_VS_DDP_MASTER_ADDR; 127.0.0.1 when
    every rank is on this host; the interface that routes toward a known peer; else the
    hostname's address unless it is a loopback one (Debian's /etc/hosts maps the hostname
    to 127.0.1.1: a remote rank would dial its own machine), then every non-loopback
    IPv4 address of this host's interfaces. The other ranks take the first they reach."""
    override = os.environ.get("HVD_VS_DDP_MASTER_ADDR")
    if override:
        return [override]
    if env.local_size == env.world_size:
        return ["127.0.0.1"]  # every rank on this host
    if toward:  # the interface that routes toward a known peer
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((toward, 1))
            return [s.getsockname()[0]]
    if resolved is None:
        try:
            resolved = socket.gethostbyname(socket.gethostname())
        except OSError:
            resolved = ""
    found = [a for a in ([resolved] + (interface_addresses() if interfaces is None
                                       else interfaces)) if a and not a.startswith("127.")]
    if not found:
        raise RendezvousError(
            f"rank 0 of {env.world_size} ranks on several hosts has no address but loopback "
            f"(its hostname gives {resolved or 'nothing'}); set HVD_VS_DDP_MASTER_ADDR")
    return list(dict.fromkeys(found))


def interface_addresses() -> list[str]:
    """The IPv4 address of every interface of this host (Linux: SIOCGIFADDR)."""
    import fcntl
    import struct

    out = []
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915,  # SIOCGIFADDR
                                     struct.pack("256s", name[:15].encode()))
            except OSError:
                continue  # no IPv4 address on it
        out.append(socket.inet_ntoa(packed[20:24]))
    return out


def reachable(candidates: list[str], port: int, timeout_s: float = 3.0) -> str:
    """The first of rank 0's `candidates` this rank can open a TCP connection to."""
    if len(candidates) == 1:
        return candidates[0]
    for addr in candidates:
        try:
            with socket.create_connection((addr, port), timeout=timeout_s):
                return addr
        except OSError:
            continue
    raise RendezvousError(f"none of rank 0's addresses {', '.join(candidates)} answers on "
                          f"port {port}; set HVD_VS_DDP_MASTER_ADDR")


def _mpi_exchange(value: object) -> object:
    from mpi4py import MPI  # initialises MPI: only called under an MPI launcher

    return MPI.COMM_WORLD.bcast(value, root=0)


def _horovod_kv_exchange(env: LauncherEnv, timeout_s: float) -> Exchange:
    """Horovod's Gloo rendezvous server takes PUT/GET of /<scope>/<key>."""
    addr = os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"]
    port = os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"]
    # One key per process group creation, unique within the job.
    scope = os.environ.get("HVD_VS_DDP_KV_SCOPE", "hvd_vs_ddp")
    key = f"master_{_next_generation()}"
    url = f"http://{addr}:{port}/{scope}/{key}"

    def exchange(value: object) -> object:
        if env.rank == 0:
            req = urllib.request.Request(url, data=json.dumps(value).encode(), method="PUT")
            urllib.request.urlopen(req, timeout=30).read()
            return value
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(url, timeout=30) as resp:
                    return json.loads(resp.read().decode())
            except urllib.error.HTTPError as exc:
                if exc.code != 404 or time.monotonic() > deadline:
                    raise RendezvousError(
                        f"rank {env.rank}: no master address from rank 0 at {url} "
                        f"after {timeout_s:.0f}s ({exc})") from None
                time.sleep(0.1)

    return exchange


_GENERATION = 0


def _next_generation() -> int:
    global _GENERATION
    _GENERATION += 1
    return _GENERATION


def _slurm_endpoint(env: LauncherEnv) -> tuple[str, int]:
    nodelist = os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST", "")
    try:
        first = subprocess.run(["scontrol", "show", "hostnames", nodelist], check=True,
                               capture_output=True, text=True, timeout=30).stdout.split()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        first = nodelist.split(",")[0] or "127.0.0.1"
    ident = f"{os.environ.get('SLURM_JOB_ID', '0')}.{os.environ.get('SLURM_STEP_ID', '0')}"
    port = 20000 + int(hashlib.sha1(ident.encode()).hexdigest(), 16) % 20000
    return first, port


def exchange_for(env: LauncherEnv, timeout_s: float) -> Exchange | None:
    """A broadcast-from-rank-0 channel that exists before torch.distributed does."""
    if mpi_ranks():
        return _mpi_exchange
    if "HOROVOD_GLOO_RENDEZVOUS_ADDR" in os.environ:
        return _horovod_kv_exchange(env, timeout_s)
    return None


_JOB_STORE: Store | None = None
_PG_GENERATION = 0


def job_store(env: LauncherEnv, timeout: datetime.timedelta) -> Store:
    """The job's one TCPStore, made once per process and shared by every user.

    The collective pytest plugin and each process group creation use it under
    their own prefixes, so rank 0's address is exchanged once per job.
    """
    global _JOB_STORE
    if _JOB_STORE is None:
        _JOB_STORE = _make_store(env, timeout)
        atexit.register(close_job_store)
    return _JOB_STORE


def close_job_store() -> None:
    """Keep the store alive through interpreter teardown; the OS closes its socket.

    Destroying a TCPStore client at exit sometimes aborts the process ("terminate
    called without an active exception": a joinable C++ thread destroyed), which
    would turn a finished, passing run into a crash. Leaking one object at exit
    costs nothing.
    """
    if _JOB_STORE is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_JOB_STORE))


def store_for(env: LauncherEnv, timeout: datetime.timedelta) -> Store:
    """A fresh namespace of the job store for one init_process_group."""
    global _PG_GENERATION
    _PG_GENERATION += 1  # every rank creates process groups in the same order
    return PrefixStore(f"hvd_vs_ddp/pg{_PG_GENERATION}", job_store(env, timeout))


def _make_store(env: LauncherEnv, timeout: datetime.timedelta) -> TCPStore:
    if env.world_size == 1:
        return TCPStore("127.0.0.1", 0, 1, is_master=True, timeout=timeout)
    if env.master_addr and env.master_port:
        # torchrun's agent already serves a store there (TORCHELASTIC_USE_AGENT_STORE).
        # So does the spawn launcher's parent (hvd_vs_ddp/harness/spawn_ranks.py).
        agent = (os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
                 or os.environ.get("HVD_VS_DDP_LAUNCHER_STORE") == "1")
        return TCPStore(env.master_addr, env.master_port, None if agent else env.world_size,
                        is_master=env.rank == 0 and not agent, timeout=timeout,
                        wait_for_workers=False)
    if env.launcher == "srun":
        host, port = _slurm_endpoint(env)
        return TCPStore(host, port, env.world_size, is_master=env.rank == 0, timeout=timeout,
                        wait_for_workers=False)
    exchange = exchange_for(env, timeout.total_seconds())
    if exchange is None:
        raise RendezvousError(
            f"{env.launcher}: no MASTER_ADDR/MASTER_PORT and no channel to share them; "
            "set MASTER_ADDR and MASTER_PORT for every rank")
    store = None
    if env.rank == 0:
        toward = os.environ.get("HOROVOD_GLOO_RENDEZVOUS_ADDR")
        store = TCPStore("0.0.0.0", 0, env.world_size, is_master=True, timeout=timeout,
                         wait_for_workers=False)
        endpoint = exchange([addresses(env, toward), store.port])
    else:
        endpoint = exchange(None)
    candidates: list[str] = list(endpoint[0])  # type: ignore[index]
    port = endpoint[1]  # type: ignore[index]
    if store is None:
        host = reachable(candidates, int(port))
        store = TCPStore(host, int(port), env.world_size, is_master=False, timeout=timeout)
    return store

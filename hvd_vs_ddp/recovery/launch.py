"""The commands that start a recovery trial's elastic job, one list per process to start.

- horovod-elastic: one `horovodrun -np W --min-np MIN --max-np W --host-discovery-script
  S --gloo` whose script S (written into the trial directory) prints the two hosts,
  `localhost:A` and `127.0.0.1:B`, so that Horovod can blacklist one of them;
- torchrun-elastic: one torchrun agent per host (`--nnodes MINN:2`, that host's workers
  per node, `--max-restarts`, c10d rendezvous on a free local port, `--local-addr` the
  host's name), as on a cluster where every node runs its own agent; each round of the
  rendezvous gets a fresh store (TORCHRUN_ENV says why);
- torchft: a `torchft_lighthouse` (a service, ended when the job is) and one torchrun
  agent per worker (`--standalone --nproc-per-node 1 --max-restarts`): every worker is
  a replica group of its own, as torchft deploys them.

Every process gets the launcher table's environment (hvd_vs_ddp/backends/launchers.py),
the plan's path and, for torchrun, which host it stands for.

    python -m hvd_vs_ddp.recovery.launch horovod-elastic 3    # prints the commands
"""
from __future__ import annotations

import socket
import sys
import uuid
from pathlib import Path

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.backends.launchers import _bin
from hvd_vs_ddp.recovery.plan import HOST_ENV, PATHS, PLAN_ENV, Plan

MAX_RESTARTS = 3           # torchrun: group restarts allowed (one kill needs one)
LIGHTHOUSE_JOIN_MS = 5000  # torchft: how long a quorum waits for heartbeating stragglers
ELASTIC_TIMEOUT_S = 60     # horovodrun: how long a re-rendezvous may take
# (command, its extra environment, a service: ended once the others have exited)
Launch = tuple[list[str], dict[str, str], bool]
# A fresh rendezvous store per round. With torch 2.14.1's default (the agents share one
# TCPStore with the workers across rounds) a restarted group whose ranks reach
# init_process_group a second or more apart fails: Gloo dials a peer address left from
# the previous round ("connection refused"), every restart alike, until max-restarts
# is spent (measured here; docs/recovery.md). This opt-out is torch's own.
TORCHRUN_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _horovod(plan: Plan, trial: Path, python: str) -> list[Launch]:
    script = trial / "hosts.sh"
    script.write_text("#!/bin/sh\n" + "".join(f"echo {h}:{n}\n" for h, n in plan.hosts()))
    script.chmod(0o755)
    w = plan.world_size
    cmd = [_bin("horovodrun"), "-np", str(w), "--min-np", str(plan.min_world), "--max-np",
           str(w), "--host-discovery-script", str(script), "--gloo",
           "--elastic-timeout", str(ELASTIC_TIMEOUT_S), "--start-timeout", "120",
           "--gloo-timeout-seconds", str(max(1, round(plan.timeout_s))),
           python, "-m", PATHS[plan.path].worker]
    return [(cmd, {}, False)]


def _torchrun(plan: Plan, trial: Path, python: str) -> list[Launch]:
    hosts = plan.hosts()
    min_nodes = 1 if max(n for _, n in hosts) >= plan.min_world else len(hosts)
    endpoint = f"127.0.0.1:{free_port()}"
    run_id = f"recovery-{uuid.uuid4().hex[:12]}"
    out = []
    for host, slots in hosts:
        cmd = [_bin("torchrun"), "--nnodes", f"{min_nodes}:{len(hosts)}", "--nproc-per-node",
               str(slots), "--max-restarts", str(MAX_RESTARTS), "--rdzv-backend", "c10d",
               "--rdzv-endpoint", endpoint, "--rdzv-id", run_id,
               "--rdzv-conf", "join_timeout=120", "--monitor-interval", "0.1",
               "--local-addr", host, "--no-python", python, "-m", PATHS[plan.path].worker]
        out.append((cmd, {HOST_ENV: host, **TORCHRUN_ENV}, False))
    return out


def _torchft(plan: Plan, trial: Path, python: str) -> list[Launch]:
    from hvd_vs_ddp.recovery.torchft_worker import LIGHTHOUSE_ENV, REPLICA_ENV

    port = free_port()
    out: list[Launch] = [([_bin("torchft_lighthouse"), "--min_replicas", str(plan.min_world),
                           "--bind", f"127.0.0.1:{port}", "--join_timeout_ms",
                           str(LIGHTHOUSE_JOIN_MS)], {}, True)]
    replicas = [host for host, slots in plan.hosts() for _ in range(slots)]
    for i, host in enumerate(replicas):
        cmd = [_bin("torchrun"), "--standalone", "--nproc-per-node", "1", "--max-restarts",
               str(MAX_RESTARTS), "--monitor-interval", "0.1", "--no-python", python, "-m",
               PATHS[plan.path].worker]
        out.append((cmd, {HOST_ENV: host, REPLICA_ENV: str(i),
                          LIGHTHOUSE_ENV: f"http://127.0.0.1:{port}"}, False))
    return out


BUILDERS = {"horovod-elastic": _horovod, "torchrun-elastic": _torchrun, "torchft": _torchft}


def commands(plan: Plan, trial: Path, python: str | None = None,
             gpus: int | None = None) -> list[Launch]:
    """The processes to start for this plan (trial: the trial's directory). On a machine
    with `gpus` GPUs (default: what torch sees) each "host" gets its own (Plan.gpu_split),
    so that two workers of local rank 0 never both take cuda:0."""
    if gpus is None:
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    split = plan.gpu_split(gpus)
    return [(cmd, {**split, **extra}, service) for cmd, extra, service in
            BUILDERS[plan.path](plan, trial, python or sys.executable)]


def environment(plan_file: Path, launcher: str, extra: dict[str, str]) -> dict[str, str]:
    env = launchers.env(launcher=launcher)
    env[PLAN_ENV] = str(plan_file)
    env.update(extra)
    return env


if __name__ == "__main__":
    import tempfile

    path, world = sys.argv[1], int(sys.argv[2])
    backend = PATHS[path].backends[0]
    demo = Plan(path=path, checkpoint=PATHS[path].checkpoints[0], backend=backend,
                world_size=world, global_batch=12 * world).check()
    for cmd, extra, _service in commands(demo, Path(tempfile.mkdtemp())):
        print(" ".join(f"{k}={v}" for k, v in extra.items()), " ".join(cmd))

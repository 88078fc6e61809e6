"""The command line of a cell across emulated hosts (docs/links.md).

The runner (hvd_vs_ddp/cli/runner.py) makes two hosts for such a cell
(hvd_vs_ddp/links/hosts.py, one rank on each, a link shaped to the cell's rate between
them) and starts what `command` returns instead of the one-host command:

- torchrun: one `torchrun --nnodes 2 --nproc-per-node 1 --node-rank R --master-addr
  hvd-node1` inside each host, started together by hvd_vs_ddp/links/fanout.py; Gloo
  told the link's interface (GLOO_SOCKET_IFNAME);
- horovodrun (Gloo or MPI controller) and mpirun: started inside hvd-node1 with
  `-H/--host hvd-node1:1,hvd-node2:1`, reaching hvd-node2 through the ssh stand-in first
  on PATH (a clean environment there, as sshd gives: the launcher must forward what the
  rank needs, as across real machines); Open MPI kept to the link's interface.

Every rank also gets HVD_VS_DDP_LINK (the rate, recorded in its results) and
HVD_VS_DDP_LINK_IFACE (the interface whose bytes it counts around its timed rounds:
hvd_vs_ddp/links/wire.py).

    cmd = link_launch.command("torchrun", 2, argv, hosts, env)   # env: changed in place
"""
from __future__ import annotations

import json
import os
import sys
from typing import MutableMapping

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.links import wire
from hvd_vs_ddp.links.hosts import IFACE, EmulatedHosts

MASTER_PORT = 29400  # inside fresh namespaces nothing else holds a port


def command(launcher: str, nprocs: int, argv: list[str], hosts: EmulatedHosts,
            env: MutableMapping[str, str], python: str | None = None) -> list[str]:
    """The cell's command across `hosts`; `env` gets the link's variables."""
    python = python or sys.executable
    if nprocs != len(hosts.hosts):
        raise launchers.LauncherUnavailable(
            f"{nprocs} ranks on {len(hosts.hosts)} emulated hosts: one rank per host")
    env.update({wire.LINK_ENV: hosts.link, wire.IFACE_ENV: IFACE,
                "GLOO_SOCKET_IFNAME": IFACE,
                "OMPI_MCA_btl_tcp_if_include": IFACE, "OMPI_MCA_oob_tcp_if_include": IFACE})
    first = hosts.hosts[0]
    if launcher == "torchrun":
        torchrun = launchers._bin("torchrun")
        per_host = [[*h.prefix(), torchrun, "--nnodes", str(nprocs), "--nproc-per-node", "1",
                     "--node-rank", str(i), "--master-addr", first.hostname,
                     "--master-port", str(MASTER_PORT), "--no-python", python, *argv]
                    for i, h in enumerate(hosts.hosts)]
        return [python, "-m", "hvd_vs_ddp.links.fanout", json.dumps(per_host)]
    if launcher in ("horovodrun-gloo", "horovodrun-mpi", "mpirun"):
        env["PATH"] = f"{hosts.ssh_standin()}{os.pathsep}{env.get('PATH', '')}"
        env.setdefault("OMPI_MCA_plm_rsh_agent", "ssh")
        cmd = launchers.command(launcher, nprocs, argv, python, hosts=hosts.spec(),
                                environ=env)
        return [*first.prefix(), *cmd]
    raise launchers.LauncherUnavailable(
        f"{launcher} does not start cells across emulated hosts (torchrun, horovodrun, "
        "mpirun do)")

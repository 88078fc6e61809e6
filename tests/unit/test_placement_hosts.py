"""mpirun across hosts: rank 0 must not announce the store at gethostbyname(gethostname())
(127.0.1.1 under Debian's /etc/hosts: a remote rank would dial its own machine), and mpirun
must pass the project's, NCCL's and CUDA's variables with `-x` (remote ranks start through
ssh with a fresh environment).

    python -m pytest -p no:cacheprovider tests/unit/test_placement_hosts.py -q
"""
from __future__ import annotations

import socket

import pytest

from hvd_vs_ddp.backends import launchers, rendezvous
from hvd_vs_ddp.backends.env import LauncherEnv

TWO_HOSTS = LauncherEnv("mpirun", 0, 4, 0, 2, 0)


def test_rank_0_never_announces_a_loopback_address_to_other_hosts(monkeypatch):
    monkeypatch.delenv("HVD_VS_DDP_MASTER_ADDR", raising=False)
    got = rendezvous.addresses(TWO_HOSTS, resolved="127.0.1.1",
                               interfaces=["127.0.0.1", "10.231.0.1", "192.168.5.2"])
    assert got == ["10.231.0.1", "192.168.5.2"]
    assert rendezvous.addresses(TWO_HOSTS, resolved="10.0.0.7",
                                interfaces=["127.0.0.1", "10.0.0.7"]) == ["10.0.0.7"]
    one_host = LauncherEnv("mpirun", 0, 2, 0, 2, 0)
    assert rendezvous.addresses(one_host, resolved="127.0.1.1", interfaces=[]) == \
        ["127.0.0.1"]
    with pytest.raises(rendezvous.RendezvousError, match="HVD_VS_DDP_MASTER_ADDR"):
        rendezvous.addresses(TWO_HOSTS, resolved="127.0.1.1", interfaces=["127.0.0.1"])
    monkeypatch.setenv("HVD_VS_DDP_MASTER_ADDR", "10.9.9.9")
    assert rendezvous.addresses(TWO_HOSTS, resolved="127.0.1.1", interfaces=[]) == \
        ["10.9.9.9"]


def test_this_hosts_interfaces_are_read():
    assert "127.0.0.1" in rendezvous.interface_addresses()  # lo, on every Linux host


def test_a_rank_dials_the_first_address_that_answers():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        # 127.0.0.2 is this machine too, but nothing listens there: refused at once
        assert rendezvous.reachable(["127.0.0.2", "127.0.0.1"], port, 2.0) == "127.0.0.1"
        with pytest.raises(rendezvous.RendezvousError, match="none of rank 0's addresses"):
            rendezvous.reachable(["127.0.0.2", "127.0.0.3"], port, 2.0)


def test_mpirun_across_hosts_exports_what_remote_ranks_need():
    environ = {"NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0,1",
               "HVD_VS_DDP_LAUNCHER": "mpirun", "PYTHONPATH": "/x", "HOME": "/root",
               "SSH_AUTH_SOCK": "/tmp/s"}
    cmd = launchers.command("mpirun", 2, ["-m", "pytest"], "python", hosts="a:1,b:1",
                            environ=environ)
    pairs = {cmd[i + 1] for i, a in enumerate(cmd) if a == "-x"}
    assert pairs == {"NCCL_DEBUG", "CUDA_VISIBLE_DEVICES", "HVD_VS_DDP_LAUNCHER",
                     "PYTHONPATH"}
    assert cmd.index("-x") < cmd.index("python")
    local = launchers.command("mpirun", 2, ["-m", "pytest"], "python", environ=environ)
    assert "-x" not in local  # one host: the ranks inherit mpirun's environment

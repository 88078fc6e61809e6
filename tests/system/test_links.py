"""Emulated hosts over a shaped link, for real (issue 66): namespaces made, shaped in both
directions and removed; a token bucket smaller than a packet stalls TCP (the burst rule's
reason); a run's namespaces are swept once their owner is SIGKILLed, never while it
lives. Mechanisms only: the rates reached are measured in docs/links.md, never asserted
here (one noisy run on a shared host decides nothing).

Needs root and iproute2 (`ip netns`, `tc`), skips with the reason otherwise:
    sudo .venv/bin/python -m pytest tests/system/test_links.py -v
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.links import hosts, rates, sweep
from tests.launch import ROOT

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


@pytest.fixture(autouse=True)
def can_make_namespaces():
    try:
        hosts.check()
    except InputError as exc:
        pytest.skip(str(exc))


def _qdisc(h: hosts.Host) -> str:
    return hosts._run("ip", "netns", "exec", h.netns, "tc", "qdisc", "show", "dev",
                      hosts.IFACE)


def test_two_hosts_are_made_shaped_both_ways_and_removed():
    with hosts.EmulatedHosts("500mbit") as hs:
        names = [h.netns for h in hs.hosts]
        assert set(names) <= set(hosts.namespaces())
        for h in hs.hosts:  # each end's egress: both directions
            shown = _qdisc(h)
            assert "tbf" in shown and "rate 500Mbit" in shown, shown
            assert f"burst {rates.burst_bytes(500_000_000)}b" in shown, shown
        h1, h2 = hs.hosts
        probe = "import socket; print(socket.gethostname(), socket.gethostbyname('hvd-node1'))"
        out = subprocess.run([*h2.prefix(), sys.executable, "-c", probe], capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.split() == ["hvd-node2", h1.addr], out.stderr
    assert not set(names) & set(hosts.namespaces())
    assert not any((hosts.ETC_NETNS / n).exists() for n in names)


def _transfer(hs: hosts.EmulatedHosts, nbytes: int, timeout: float) -> bool:
    """Did `nbytes` cross from hvd-node1 to hvd-node2 within `timeout` seconds?"""
    h1, h2 = hs.hosts
    recv = subprocess.Popen([*h2.prefix(), sys.executable, "-c", sweep.RECEIVER, h2.addr,
                             str(sweep.PORT)], stdout=subprocess.PIPE, text=True)
    assert recv.stdout is not None
    recv.stdout.readline()
    try:
        send = subprocess.run([*h1.prefix(), sys.executable, "-c", sweep.SENDER, h2.addr,
                               str(sweep.PORT), str(nbytes)], capture_output=True,
                              timeout=timeout)
        return send.returncode == 0
    except subprocess.TimeoutExpired:
        return False
    finally:
        recv.kill()
        recv.wait()


def test_a_bucket_smaller_than_a_packet_stalls_tcp_and_the_rules_does_not():
    """The veth's MTU is 1500 bytes: a 1000-byte bucket can never hold a full packet, so
    every full-sized segment is dropped and the transfer does not finish; the rule's
    bucket (rates.burst_bytes) carries it. 4 MiB at 1 Gbit/s: 34 ms of wire; 20 s is
    hundreds of times that."""
    with hosts.EmulatedHosts("1gbit") as hs:
        assert _transfer(hs, 4 * 2**20, timeout=20)
        for h in hs.hosts:
            argv = rates.tbf_argv(hosts.IFACE, 10**9)
            argv[argv.index("burst") + 1] = "1000b"
            hosts._run("ip", "netns", "exec", h.netns, *argv)
        assert not _transfer(hs, 4 * 2**20, timeout=8)


OWNER = """
import subprocess, sys, time
from hvd_vs_ddp.links import hosts
hs = hosts.EmulatedHosts("1gbit").create()
subprocess.Popen([*hs.hosts[1].prefix(), "sleep", "600"])  # a process inside, as a rank
print(" ".join(h.netns for h in hs.hosts), flush=True)
time.sleep(600)
"""


def _owner() -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-c", OWNER], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout is not None
    names = proc.stdout.readline().split()
    assert len(names) == 2, "the owner made no hosts"
    return proc, names


def _pids(ns: str) -> list[str]:
    return hosts._run("ip", "netns", "pids", ns, check_rc=False).split()


def test_a_sigkilled_owners_namespaces_and_processes_go_at_the_next_sweep():
    proc, names = _owner()
    try:
        assert not set(names) & set(hosts.sweep())  # its owner lives: kept
        assert set(names) <= set(hosts.namespaces())
        inside = _pids(names[1])
        assert inside, "the process started inside the host is not there"
        os.kill(proc.pid, signal.SIGKILL)  # no clean-up can run
        proc.wait(timeout=30)
        assert set(names) <= set(hosts.namespaces())  # left behind until a sweep
        assert set(names) <= set(hosts.sweep())
        assert not set(names) & set(hosts.namespaces())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in inside):
            time.sleep(0.1)
        assert not any(os.path.exists(f"/proc/{p}") for p in inside)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for n in names:
            hosts.remove(n)


def test_a_live_concurrent_owners_namespaces_are_never_swept():
    proc, names = _owner()
    try:
        hosts.sweep()
        assert set(names) <= set(hosts.namespaces())
        assert _pids(names[1])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        hosts.sweep()
    assert not set(names) & set(hosts.namespaces())


def test_without_root_the_check_refuses_in_one_line(tmp_path):
    """As a user without root (`setpriv` to nobody): the one-line refusal, nothing made."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux)")
    before = set(hosts.namespaces())
    out = subprocess.run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          sys.executable, "-c", "from hvd_vs_ddp.links import hosts; "
                          "hosts.check(); hosts.EmulatedHosts('1gbit').create()"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HOME": str(tmp_path)})
    if "Permission denied" in out.stderr and "LinkError" not in out.stderr:
        pytest.skip(f"nobody cannot read the checkout here: {out.stderr.strip()[-200:]}")
    assert out.returncode != 0
    assert "LinkError: --emulate-hosts makes network namespaces" in out.stderr, out.stderr
    assert set(hosts.namespaces()) == before

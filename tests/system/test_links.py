"""Emulated hosts over a shaped link, for real: namespaces made, shaped in both
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
from hvd_vs_ddp.common.processes import signal_groups
from hvd_vs_ddp.links import hosts, rates, sweep
from tests.launch import ROOT, default_stop_signals

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


def _inside(ns: str, timeout: float = 20) -> list[str]:
    """The processes in namespace `ns` once there is one (a process just started there
    enters it a moment later)."""
    deadline = time.monotonic() + timeout
    while not _pids(ns) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _pids(ns)


def test_a_sigkilled_owners_namespaces_and_processes_go_at_the_next_sweep():
    proc, names = _owner()
    try:
        assert not set(names) & set(hosts.sweep())  # its owner lives: kept
        assert set(names) <= set(hosts.namespaces())
        inside = _inside(names[1])
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
        signal_groups([proc], signal.SIGKILL)
        proc.wait()
        for n in names:
            hosts.remove(n)


def test_a_live_concurrent_owners_namespaces_are_never_swept():
    proc, names = _owner()
    try:
        assert _inside(names[1])
        hosts.sweep()
        assert set(names) <= set(hosts.namespaces())
        assert _pids(names[1])
    finally:
        signal_groups([proc], signal.SIGKILL)
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


# -- the run axis: hvd-vs-ddp run --emulate-hosts 2 --link-rate ... ----------------
def _hvd(*args: str) -> list[str]:
    return [sys.executable, "-m", "hvd_vs_ddp.cli", *args]


LINKED = ("run", "--preset", "quick", "--backends", "ddp-gloo", "--world-sizes", "2",
          "--suites", "throughput", "--workloads", "mlp", "--repeat", "1",
          "--emulate-hosts", "2", "--link-rate", "100mbit")


def _owned_by(pid: int) -> list[str]:
    return [n for n in hosts.namespaces() if n.startswith(f"{hosts.PREFIX}-{pid}-")]


def test_a_run_killed_mid_cell_leaves_no_namespace_nor_process_once_the_next_starts(
        tmp_path):
    """SIGKILL the runner while its cell's ranks train across the emulated hosts: its
    namespaces and ranks outlive it (nothing could clean up), and the next run's start
    removes them all (the owner named in them is dead)."""
    from hvd_vs_ddp.cli.run_lock import CELL_MARKER, marker_root
    from hvd_vs_ddp.common import processes

    runs = tmp_path / "runs"
    first = subprocess.Popen(_hvd(*LINKED, "--runs-dir", str(runs), "--name", "killed",
                                  "--suite-args", "--rounds 400"),
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = marker_root(runs / "killed")
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # until both hosts hold a rank of the cell
            names = _owned_by(first.pid)
            if len(names) == 2 and all(_pids(n) for n in names) and len(
                    processes.marked(CELL_MARKER, mine, prefix=True)) >= 2:
                break
            assert first.poll() is None, "the run ended before its cell was under way"
            time.sleep(0.5)
        else:
            pytest.fail("the cell's ranks never started across the emulated hosts")
        time.sleep(3)  # mid-cell
        first.kill()  # SIGKILL: no handler runs
        first.wait(timeout=30)
        assert len(_owned_by(first.pid)) == 2  # left behind, until a run starts
        second = subprocess.run(_hvd("run", "--preset", "quick", "--backends", "single",
                                     "--world-sizes", "1", "--suites", "throughput",
                                     "--workloads", "mlp", "--repeat", "1", "--runs-dir",
                                     str(runs), "--name", "next", "--suite-args",
                                     "--rounds 1 --steps-per-round 1"),
                                cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-3000:]
        # every run's start sweeps a dead owner's hosts: this one's, unless a run that a
        # test on the other pytest worker started in the meantime swept them first
        assert _owned_by(first.pid) == [], second.stderr[-3000:]
        if "removed emulated host" not in second.stderr:
            print("the killed run's hosts were swept by a run on the other pytest worker")
        deadline = time.monotonic() + 30  # the fanout outside the hosts ends with its ranks
        while time.monotonic() < deadline and processes.marked(CELL_MARKER, mine, prefix=True):
            time.sleep(0.5)
        left = processes.described(processes.marked(CELL_MARKER, mine, prefix=True))
        assert not left, f"processes of the killed run left: {left}"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        for n in _owned_by(first.pid):
            hosts.remove(n)
        processes.end_marked(CELL_MARKER, mine, prefix=True)


def test_run_without_root_is_refused_in_one_line_before_anything_starts(tmp_path):
    """`hvd-vs-ddp run --emulate-hosts 2` as nobody: one line, exit 2, nothing written,
    no namespace made."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux)")
    runs = tmp_path / "runs"
    tmp_path.chmod(0o777)
    before = set(hosts.namespaces())
    out = subprocess.run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          *_hvd(*LINKED, "--runs-dir", str(runs))], cwd=ROOT,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOME": str(tmp_path)})
    if "Permission denied" in out.stderr and "hvd-vs-ddp: error" not in out.stderr:
        pytest.skip(f"nobody cannot read the checkout here: {out.stderr.strip()[-200:]}")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error: --emulate-hosts "
                                                   "makes network namespaces"), out.stderr
    assert "needs root" in lines[0]
    assert not runs.exists()
    assert set(hosts.namespaces()) == before


def test_each_launcher_crosses_the_link_and_its_cells_record_it(tmp_path):
    """One cell per launcher across two hosts at 100 Mbit/s (torchrun: one per host;
    horovodrun with either controller and mpirun: through the ssh stand-in): each passes,
    its manifest entry and results name the link, and each rank's host sent about a ring
    allreduce's bytes per timed step (bytes are counted, not timed: headers and
    acknowledgements add a few percent; nothing here measures a speed)."""
    import json

    from hvd_vs_ddp.backends import launchers

    backends = ["ddp-gloo", "ddp-mpi"] + (["horovod"] if launchers.available(
        "horovodrun-gloo") else [])
    runs = tmp_path / "runs"
    out = subprocess.run(_hvd(*[a if a != "ddp-gloo" else ",".join(backends) for a in LINKED],
                              "--runs-dir", str(runs), "--name", "linked", "--suite-args",
                              "--rounds 2 --steps-per-round 2"),
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    manifest = json.loads((runs / "linked" / "manifest.json").read_text())
    linked = [c for c in manifest["cells"] if c.get("link")]
    assert {c["launcher"] for c in linked} >= {"torchrun", "mpirun"}
    for cell in linked:
        assert cell["link"] == "100mbit" and cell["id"].endswith("-link100mbit")
        doc = json.loads((runs / "linked" / cell["results"]).read_text())
        for b in doc["benchmarks"]:
            info = b["extra_info"]
            assert info["link"] == "100mbit", cell["id"]
            wire = info["wire"]
            assert wire["iface"] == hosts.IFACE and wire["timed_steps"] == 4
            assert len(wire["ranks"]) == 2
            assert 0.9 <= wire["wire_over_ring"] <= 1.3, (cell["id"], wire)
    assert hosts.namespaces() == [n for n in hosts.namespaces() if hosts.owner_alive(n)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_an_interrupted_run_removes_its_hosts_at_once(tmp_path, sig):
    """SIGTERM or SIGINT while the cell's ranks train across the hosts: the run ends the
    cell (128 + the signal) and removes its namespaces itself, no sweep needed."""
    from hvd_vs_ddp.cli.run_lock import CELL_MARKER, marker_root
    from hvd_vs_ddp.common import processes

    runs = tmp_path / "runs"
    run = subprocess.Popen(_hvd(*LINKED, "--runs-dir", str(runs), "--name", "stopped",
                                "--suite-args", "--rounds 400"),
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, preexec_fn=default_stop_signals)
    mine = marker_root(runs / "stopped")
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            names = _owned_by(run.pid)
            if len(names) == 2 and all(_pids(n) for n in names):
                break
            assert run.poll() is None, "the run ended before its cell was under way"
            time.sleep(0.5)
        else:
            pytest.fail("the cell never started across the emulated hosts")
        time.sleep(2)
        run.send_signal(sig)
        _, err = run.communicate(timeout=120)
        assert run.returncode == 128 + sig, err[-3000:]
        assert _owned_by(run.pid) == [], err[-3000:]
        assert not processes.described(processes.marked(CELL_MARKER, mine, prefix=True))
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for n in _owned_by(run.pid):
            hosts.remove(n)
        processes.end_marked(CELL_MARKER, mine, prefix=True)

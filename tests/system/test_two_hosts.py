"""Two real hosts on one machine: DDP and Horovod across a network link.

Each "host" is a Linux network namespace with its own network stack, its own
hostname (a UTS namespace) and its own /etc/hosts, made by the package's emulated hosts
(hvd_vs_ddp/links/hosts.py, the same `run --emulate-hosts` uses, here with a rate that
shapes nothing); the two are joined by a veth pair, so every byte between the ranks
crosses a real network interface (`hvd0`, 10.231.0.1/24 on hvd-node1, 10.231.0.2/24 on
hvd-node2). Those addresses exist only inside the namespaces this test creates and
deletes again.

- DDP over Gloo: one `torchrun --nnodes 2 --nproc-per-node 1` per host, met through
  torchrun's c10d rendezvous (`--rdzv-endpoint hvd-node1:PORT`) or through the static
  one (`--node-rank R --master-addr hvd-node1`), GLOO_SOCKET_IFNAME=hvd0.
- Horovod over Gloo: `horovodrun --gloo -H hvd-node1:1,hvd-node2:1`, run on
  hvd-node1, exactly as on a cluster: it checks ssh, starts its task services on
  both hosts to find the common routed interface (it finds hvd0) and starts the
  remote rank over ssh. The one stand-in is ssh itself: an `ssh` script first on
  PATH runs the command inside the other host's namespaces with a clean
  environment (as sshd would), so horovodrun must forward everything the rank
  needs, as it must across real machines. Running the per-host processes by hand
  with Horovod's Gloo variables would skip the part of horovodrun that most often
  breaks across machines (interface discovery and remote start), hence this choice.

Why each host gets its own hostname and /etc/hosts, not just its own addresses: with
a shared hostname that resolves to 127.0.0.1, Horovod 0.28.1 fails (the Gloo context
of its process sets, set up inside hvd.init(), is built from the hostname's address
and ignores HOROVOD_GLOO_IFACE), and torchrun's c10d endpoint cannot tell that it is
the host. Real clusters have distinct names that resolve to routable addresses.

Both run tests/ranks/train_equivalence.py (it checks the backend against `single`)
and save rank 0's final weights; those must equal a one-host run of the same
backend with the same world size (<= 1e-6; in practice bitwise), and the bytes
counted on hvd0 show that the gradients did cross the link.

Needs root, iproute2 (`ip`, `tc`) and util-linux (`unshare`); skips with the reason
otherwise:
    sudo .venv/bin/python -m pytest tests/system/test_two_hosts.py -v
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.common.processes import signal_groups
from hvd_vs_ddp.links import hosts
from hvd_vs_ddp.links.hosts import ETC_NETNS, IFACE
from hvd_vs_ddp.links.rates import LinkError
from tests.launch import ROOT, horovod_available
from tests.system.jobs import equivalence, trained

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers

WORKER = "tests/ranks/train_equivalence.py"
STEPS = 10
# The hosts come from hvd_vs_ddp/links/hosts.py; a rate far above what a veth carries on
# a CPU shapes nothing (as the link sweep's unshaped reference does).
UNSHAPED = "100gbit"
# Inside fresh namespaces nothing else can hold a port, so a fixed one cannot collide.
RDZV_PORT = 29400
TIMEOUT_S = 240  # per launched job; below pytest's patience, above the ~20 s it takes


class TwoHosts:
    """The package's emulated hosts (hvd_vs_ddp/links/hosts.py) with an unshaped link, and
    the processes this test started on them (ended, with the hosts, by the fixture)."""

    def __init__(self, made: hosts.EmulatedHosts) -> None:
        self.made, self.hosts = made, made.hosts
        self.tag = made.hosts[0].netns  # unique per set: the c10d rendezvous id
        self.procs: list[subprocess.Popen] = []

    def link_bytes(self) -> int:
        """Bytes sent over the link, both directions."""
        return sum(h.tx_bytes() for h in self.hosts)

    def start(self, host: hosts.Host, argv: list[str], env: dict[str, str], log: Path
              ) -> subprocess.Popen:
        with open(log, "w") as fh:
            proc = subprocess.Popen([*host.prefix(), *argv], cwd=ROOT, env=env, stdout=fh,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc


@pytest.fixture
def two_hosts():
    try:
        hosts.check()
    except LinkError as exc:
        pytest.skip(str(exc))
    made = hosts.EmulatedHosts(UNSHAPED)
    running = TwoHosts(made)
    try:
        try:
            made.create()
        except (RuntimeError, OSError) as exc:
            pytest.skip(f"cannot create two network namespaces here: {exc}")
        h1, h2 = made.hosts  # hvd-node2 knows its own name and finds hvd-node1 by name
        probe = "import socket; print(socket.gethostname(), socket.gethostbyname('hvd-node1'))"
        out = subprocess.run([*h2.prefix(), sys.executable, "-c", probe],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.split() == ["hvd-node2", h1.addr], \
            f"namespace set-up is wrong: {out.stdout}{out.stderr}"
        yield running
    finally:
        signal_groups(running.procs, signal.SIGKILL)  # our own process groups first
        for proc in running.procs:
            proc.wait(timeout=30)
        made.close()  # then anything left inside (a remote rank) and the namespaces


def _tool(name: str) -> str:
    avail = launchers.available(name if name != "horovodrun" else "horovodrun-gloo")
    if not avail:
        pytest.skip(avail.reason)
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def _env(**extra: str) -> dict[str, str]:
    env = launchers.env()
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env.update(extra)
    return env


def _wait(procs: list[subprocess.Popen], logs: list[Path], timeout: float) -> str:
    """Wait for all; fail with every log if one fails or time runs out.

    A rank that dies leaves its peer waiting for it until a rendezvous timeout, so
    the first failure ends the wait (the fixture then kills what is left).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        codes = [p.poll() for p in procs]
        if None not in codes or any(c not in (None, 0) for c in codes):
            break
        time.sleep(0.2)
    text = "\n".join(f"--- {log.name} ---\n{log.read_text()}" for log in logs)
    codes = [p.poll() for p in procs]
    if any(c not in (None, 0) for c in codes):
        pytest.fail(f"two-host job failed, exit codes {codes} (None: still running):\n"
                    f"{_tail(text)}")
    if None in codes:
        pytest.fail(f"two-host job did not finish in {timeout:.0f}s:\n{_tail(text)}")
    return text


def _tail(text: str, chars: int = 8000) -> str:
    return text if len(text) <= chars else "...\n" + text[-chars:]


def _one_host_weights(jobs, launcher: str, backend: str):
    """Rank 0's weights of the same job on one host: the shared equivalence run
    (tests/system/jobs.py; its default is STEPS steps)."""
    return _load(trained(jobs.get(equivalence(backend, launcher))) / "weights-accum1.pt")


def _load(path: Path):
    import torch

    return torch.load(path)


def _assert_same(two, one, crossed_bytes: int, logs: str) -> None:
    diff = (two - one).abs().max().item()
    assert diff <= 1e-6, f"two hosts differ from one host by {diff:.3e} > 1e-6\n{_tail(logs)}"
    # Each step moves every gradient across the link at least halfway (ring allreduce).
    least = STEPS * two.numel() * two.element_size() // 2
    assert crossed_bytes >= least, (
        f"only {crossed_bytes} bytes crossed {IFACE}, expected >= {least}: "
        f"the ranks did not talk over the link\n{_tail(logs)}")
    print(f"two hosts vs one host: max |diff| {diff:.1e} "
          f"({'bitwise equal' if diff == 0 else 'within 1e-6'}); "
          f"{crossed_bytes} bytes over {IFACE} (>= {least} needed)")


@pytest.mark.parametrize("rendezvous", ["c10d", "static"])
def test_ddp_gloo_across_two_hosts_matches_one_host(two_hosts, jobs, tmp_path, rendezvous):
    torchrun = _tool("torchrun")
    one = _one_host_weights(jobs, "torchrun", "ddp-gloo")

    h1 = two_hosts.hosts[0]
    before = two_hosts.link_bytes()
    env = _env(GLOO_SOCKET_IFNAME=IFACE)
    procs, logs, saves = [], [], []
    for node_rank, host in enumerate(two_hosts.hosts):
        if rendezvous == "c10d":  # node ranks are handed out by the rendezvous
            meet = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{h1.hostname}:{RDZV_PORT}",
                    "--rdzv-id", two_hosts.tag]
        else:
            meet = ["--node-rank", str(node_rank), "--master-addr", h1.hostname,
                    "--master-port", str(RDZV_PORT)]
        saves.append(tmp_path / f"{host.hostname}.pt")
        logs.append(tmp_path / f"{host.hostname}.log")
        argv = [torchrun, "--nnodes", "2", "--nproc-per-node", "1", *meet, "--no-python",
                sys.executable, WORKER, "ddp-gloo", "--steps", str(STEPS),
                "--save", str(saves[-1])]
        procs.append(two_hosts.start(host, argv, env, logs[-1]))
    text = _wait(procs, logs, TIMEOUT_S)
    crossed = two_hosts.link_bytes() - before

    written = [s for s in saves if s.exists()]
    assert len(written) == 1, f"expected rank 0's weights from one host, got {written}\n" \
        + _tail(text)
    assert "ddp-gloo on torchrun x2" in text, _tail(text)
    _assert_same(_load(written[0]), one, crossed, text)


def test_horovod_gloo_across_two_hosts_matches_one_host(two_hosts, jobs, tmp_path):
    ok, why = horovod_available()
    if not ok:
        pytest.skip(why)
    horovodrun = _tool("horovodrun")
    one = _one_host_weights(jobs, "horovodrun-gloo", "horovod")

    bindir = two_hosts.made.ssh_standin()

    h1, h2 = two_hosts.hosts
    env = _env()
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    save, log = tmp_path / "two-hosts.pt", tmp_path / "horovodrun.log"
    argv = [horovodrun, "-np", "2", "--gloo", "-H", f"{h1.hostname}:1,{h2.hostname}:1",
            "--disable-cache", "--start-timeout", "120", "--verbose",
            sys.executable, WORKER, "horovod", "--steps", str(STEPS), "--save", str(save)]
    before = two_hosts.link_bytes()
    text = _wait([two_hosts.start(h1, argv, env, log)], [log], TIMEOUT_S)
    crossed = two_hosts.link_bytes() - before

    assert "Remote host found: hvd-node2" in text, _tail(text)  # it really went "remote"
    assert f"Common interface found: {IFACE}" in text, _tail(text)
    assert "horovod on horovodrun-gloo x2" in text, _tail(text)
    _assert_same(_load(save), one, crossed, text)


def test_ddp_gloo_under_mpirun_across_two_hosts_matches_one_host(two_hosts, jobs, tmp_path):
    """mpirun across hosts, as on a Debian cluster: hvd-node1's
    /etc/hosts maps its own name to 127.0.1.1 first, and mpirun starts the remote rank
    through ssh (the stand-in: a clean environment). Rank 0 must announce a routable
    address, not 127.0.1.1, and mpirun must carry PYTHONPATH, GLOO_*, HVD_VS_DDP_* (-x)."""
    if not launchers.available("mpirun"):
        pytest.skip(launchers.available("mpirun").reason)
    one = _one_host_weights(jobs, "mpirun", "ddp-gloo")
    bindir = two_hosts.made.ssh_standin()
    h1, h2 = two_hosts.hosts
    etc_hosts = ETC_NETNS / h1.netns / "hosts"
    etc_hosts.write_text(f"127.0.1.1 {h1.hostname}\n" + etc_hosts.read_text())  # Debian's
    env = _env(GLOO_SOCKET_IFNAME=IFACE, OMPI_MCA_btl_tcp_if_include=IFACE,
               OMPI_MCA_oob_tcp_if_include=IFACE)
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    save, log = tmp_path / "two-hosts.pt", tmp_path / "mpirun.log"
    cmd = launchers.command("mpirun", 2, [WORKER, "ddp-gloo", "--steps", str(STEPS),
                                          "--save", str(save)],
                            hosts=f"{h1.hostname}:1,{h2.hostname}:1", environ=env)
    before = two_hosts.link_bytes()
    text = _wait([two_hosts.start(h1, cmd, env, log)], [log], TIMEOUT_S)
    crossed = two_hosts.link_bytes() - before
    assert "ddp-gloo on mpirun x2" in text, _tail(text)
    _assert_same(_load(save), one, crossed, text)

"""Emulated hosts: network namespaces joined by one veth pair whose rate is shaped.

Each host is a Linux network namespace with its own hostname (a UTS namespace entered
per command: `Host.prefix`) and its own /etc/hosts (`ip netns exec NS` bind-mounts
/etc/netns/NS/hosts over /etc/hosts), so names resolve as on a cluster: hvd-node1 and
hvd-node2 at 10.231.0.1 and 10.231.0.2 on interface `hvd0` in both. The veth pair is
made inside the two namespaces at once (nothing is ever left in this host's own
namespace), and each end's egress goes through a token-bucket filter at the link's rate
(hvd_vs_ddp/links/rates.py), so both directions are shaped.

Ownership: namespaces are named `hvdl-<pid>-<start>-<k>-<i>`: the process that made them
(its pid and start time in clock ticks, so a reused pid is not mistaken for the owner),
the k-th set it made, host i. `sweep()`, called at every run's start, removes the
namespaces (with every process inside them and their /etc/netns folders) whose owner is
dead, and never one whose owner lives: a concurrent run's hosts are left alone.
`EmulatedHosts.close()` removes a set's own (a run calls it after each cell, on SIGINT
and SIGTERM through its interrupt handling); after a SIGKILL the next run's sweep does.

Needs root and iproute2 (`ip`, `tc`) and util-linux (`unshare`): `check()` says in one
line (LinkError, exit 2 at the CLI) what is missing, before anything is made.

    sudo .venv/bin/python -m hvd_vs_ddp.links.hosts 1gbit   # make two, show, remove
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hvd_vs_ddp.links import rates
from hvd_vs_ddp.links.rates import LinkError

PREFIX = "hvdl"
IFACE = "hvd0"
SUBNET = "10.231.0"
ETC_NETNS = Path("/etc/netns")
NETNS_DIR = Path("/run/netns")
TOOLS = ("ip", "tc", "unshare")
_sets = itertools.count(1)


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22);
    None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_ticks(pid) or 0}"


def owner_alive(name: str) -> bool:
    """Does the process that owns namespace `name` still run? (A name not ours: True,
    never swept.)"""
    parts = name.split("-")
    if len(parts) != 5 or parts[0] != PREFIX or not all(p.isdigit() for p in parts[1:]):
        return True
    pid, ticks = int(parts[1]), int(parts[2])
    return _start_ticks(pid) == ticks


def check() -> None:
    """One line (LinkError) if emulated hosts cannot be made here: not Linux, not root,
    or a tool missing."""
    if not sys.platform.startswith("linux"):
        raise LinkError("--emulate-hosts needs Linux network namespaces")
    if os.geteuid() != 0:
        raise LinkError("--emulate-hosts makes network namespaces and shapes their link: "
                        "it needs root (run as root, or without --emulate-hosts)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise LinkError(f"--emulate-hosts needs {', '.join(missing)} (apt-get install "
                        "iproute2 util-linux)")


def _run(*argv: str, check_rc: bool = True) -> str:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check_rc and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc.stdout


def namespaces() -> list[str]:
    """Every network namespace of this host that looks like one of ours."""
    try:
        names = [p.name for p in NETNS_DIR.iterdir()]
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(PREFIX + "-"))


def remove(name: str) -> None:
    """End every process in namespace `name`, delete it, its /etc/netns folder and the
    ssh stand-in's folder."""
    for _ in range(3):
        pids = _run("ip", "netns", "pids", name, check_rc=False).split()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        time.sleep(0.2)
    _run("ip", "netns", "del", name, check_rc=False)
    shutil.rmtree(ETC_NETNS / name, ignore_errors=True)
    shutil.rmtree(Path(tempfile.gettempdir()) / name, ignore_errors=True)


def sweep() -> list[str]:
    """Remove the namespaces whose owner is dead (a run killed with SIGKILL); never a
    live run's. Returns the names removed."""
    gone = [n for n in namespaces() if not owner_alive(n)]
    for name in gone:
        remove(name)
    return gone


def sweep_if_possible() -> list[str]:
    """`sweep()` where this process could have made hosts (root, ip); else nothing."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("ip"):
        return []
    return sweep()


@dataclass(frozen=True)
class Host:
    hostname: str
    netns: str
    addr: str

    def prefix(self) -> list[str]:
        """Run argv on this host: its network namespace and its own hostname."""
        return ["ip", "netns", "exec", self.netns, "unshare", "--uts", "--",
                "/bin/sh", "-c", 'hostname "$0" && exec "$@"', self.hostname]

    def tx_bytes(self) -> int:
        """Bytes this host has sent on its end of the link."""
        return int(_run("ip", "netns", "exec", self.netns, "cat",
                        f"/sys/class/net/{IFACE}/statistics/tx_bytes").strip())


SSH_STANDIN = """#!/bin/bash
# ssh stand-in of hvd_vs_ddp/links/hosts.py: `ssh [opts] HOST [opts] CMD...` runs CMD with
# bash on HOST (its network namespace and hostname) in a clean environment, as sshd would.
host=""
while (($#)); do
  case $1 in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) if [[ -z $host ]]; then host=$1; shift; else break; fi ;;
  esac
done
case $host in
{cases}
  *) echo "ssh: Could not resolve hostname $host: Name or service not known" >&2; exit 255 ;;
esac
exec env -i HOME="$HOME" LANG=C.UTF-8 \\
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
  ip netns exec "$ns" unshare --uts -- /bin/sh -c 'hostname "$0" && exec bash -c "$1"' "$host" "$*"
"""


def write_ssh_standin(bindir: Path, hosts) -> Path:
    """`bindir`/ssh: SSH_STANDIN for these hosts (each with .hostname, .addr, .netns),
    executable; put bindir first on PATH for horovodrun and mpirun."""
    cases = "\n".join(f"  {h.hostname}|{h.addr}) ns={h.netns} ;;" for h in hosts)
    ssh = bindir / "ssh"
    ssh.write_text(SSH_STANDIN.format(cases=cases))
    ssh.chmod(0o755)
    return ssh


class EmulatedHosts:
    """`n` hosts joined by one shaped link; `close()` removes every trace (also as a
    context manager)."""

    def __init__(self, link: str, n: int = 2) -> None:
        if n != 2:
            raise LinkError(f"--emulate-hosts {n}: only 2 hosts (one veth pair) for now")
        if not rates.emulated(link):
            raise LinkError(f"link {link!r}: emulated hosts need a rate, not {link}")
        self.link, self.bps = link, rates.bits_per_s(link)
        tag = f"{PREFIX}-{owner_tag()}-{next(_sets)}"
        self.hosts = tuple(Host(f"hvd-node{i}", f"{tag}-{i}", f"{SUBNET}.{i}")
                           for i in range(1, n + 1))
        self.bindir: Path | None = None
        self._made_etc = False  # /etc/netns made by this set (removed with it if empty)

    def __enter__(self) -> "EmulatedHosts":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.close()

    def create(self) -> "EmulatedHosts":
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def _create(self) -> None:
        h1, h2 = self.hosts
        self._made_etc = not ETC_NETNS.exists()
        for h in self.hosts:
            _run("ip", "netns", "add", h.netns)
        _run("ip", "link", "add", IFACE, "netns", h1.netns, "type", "veth",
             "peer", "name", IFACE, "netns", h2.netns)
        hosts_file = "127.0.0.1 localhost\n" + "".join(
            f"{h.addr} {h.hostname}\n" for h in self.hosts)
        for h in self.hosts:
            _run("ip", "-n", h.netns, "addr", "add", f"{h.addr}/24", "dev", IFACE)
            _run("ip", "-n", h.netns, "link", "set", "lo", "up")
            _run("ip", "-n", h.netns, "link", "set", IFACE, "up")
            _run("ip", "netns", "exec", h.netns, *rates.tbf_argv(IFACE, self.bps))
            etc = ETC_NETNS / h.netns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)

    def ssh_standin(self) -> Path:
        """A folder holding an `ssh` that runs commands on these hosts (put it first on
        PATH for horovodrun and mpirun); removed with the hosts."""
        if self.bindir is None:
            bindir = Path(tempfile.gettempdir()) / self.hosts[0].netns / "bin"
            bindir.mkdir(parents=True, exist_ok=True)
            write_ssh_standin(bindir, self.hosts)
            self.bindir = bindir
        return self.bindir

    def spec(self) -> str:
        """The hosts as a launcher's host list: 'hvd-node1:1,hvd-node2:1'."""
        return ",".join(f"{h.hostname}:1" for h in self.hosts)

    def close(self) -> None:
        for h in self.hosts:
            remove(h.netns)
        if self._made_etc:
            try:
                ETC_NETNS.rmdir()  # only if empty: another user's hosts may be in it
            except OSError:
                pass


if __name__ == "__main__":
    check()
    with EmulatedHosts(rates.canonical(sys.argv[1] if len(sys.argv) > 1 else "1gbit")) as hs:
        for host in hs.hosts:
            print(host.netns, host.hostname, host.addr)
            print(_run("ip", "netns", "exec", host.netns, "tc", "qdisc", "show", "dev", IFACE))
    print("removed; left:", namespaces())

"""The rate sweep: is each link rate reached on the veth? One TCP transfer per rate.

For each rate, two emulated hosts are made (hvd_vs_ddp/links/hosts.py), a receiver on
hvd-node2 and a sender on hvd-node1 (one TCP stream, 1 MiB writes) move about two
seconds' worth of bytes at the rate (at least 16 MiB, at most 1 GiB), and the sweep
prints the rate reached (bytes over the sender's wall time, until the receiver has
acknowledged the last byte) with the sender's and receiver's CPU seconds per wall
second (their system calls) and the share of every core busy meanwhile (the kernel's
TCP work, softirqs included, counts there): where the host is near fully busy and the
fraction of the rate falls, the CPU, not the filter, sets the pace. `none`
is the unshaped veth, the ceiling of this machine. The docs (docs/links.md) hold a
recorded sweep; nothing here asserts a speed.

    sudo .venv/bin/python -m hvd_vs_ddp.links.sweep                       # default rates
    sudo .venv/bin/python -m hvd_vs_ddp.links.sweep 100mbit,1gbit,none --json out.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from hvd_vs_ddp.links import hosts, rates

DEFAULT = "100mbit,500mbit,1gbit,2gbit,4gbit,8gbit,none"
PORT = 5201
RECEIVER = """
import resource, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); got = 0; t = time.monotonic()
while True:
    b = c.recv(1 << 20)
    if not b: break
    got += len(b)
wall = time.monotonic() - t; c.sendall(b"k")
ru = resource.getrusage(resource.RUSAGE_SELF)
print(got, wall, ru.ru_utime + ru.ru_stime, flush=True)
"""
SENDER = """
import resource, socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2]))); left = int(sys.argv[3])
buf = b"\\0" * (1 << 20); ru0 = resource.getrusage(resource.RUSAGE_SELF); t = time.monotonic()
while left > 0:
    n = min(left, len(buf)); c.sendall(buf[:n]); left -= n
c.shutdown(socket.SHUT_WR); c.recv(1); wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_SELF)
print(wall, ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime, flush=True)
"""


def _cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of every core together, from /proc/stat."""
    fields = [float(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def transfer(link: str, seconds: float = 2.0, unshaped_bps: int = 8 * 10**9) -> dict:
    """One TCP transfer across two emulated hosts at `link` ('none': unshaped)."""
    shaped = link != "none"
    bps = rates.bits_per_s(link) if shaped else unshaped_bps
    nbytes = int(min(2**30, max(16 * 2**20, bps / 8 * seconds)))
    with hosts.EmulatedHosts(link if shaped else "100gbit") as hs:
        h1, h2 = hs.hosts
        if not shaped:  # no filter at all: the veth's own pace
            for h in hs.hosts:
                subprocess.run(["ip", "netns", "exec", h.netns, "tc", "qdisc", "del", "dev",
                                hosts.IFACE, "root"], check=True, timeout=30)
        recv = subprocess.Popen([*h2.prefix(), sys.executable, "-c", RECEIVER, h2.addr,
                                 str(PORT)], stdout=subprocess.PIPE, text=True)
        assert recv.stdout is not None
        recv.stdout.readline()  # "ready"
        busy0, total0 = _cpu_times()
        send = subprocess.run([*h1.prefix(), sys.executable, "-c", SENDER, h2.addr,
                               str(PORT), str(nbytes)], capture_output=True, text=True,
                              timeout=120)
        out, _ = recv.communicate(timeout=60)
        busy1, total1 = _cpu_times()
        if send.returncode != 0:
            raise RuntimeError(f"sender failed: {send.stderr.strip()}")
        wall, send_cpu = map(float, send.stdout.split())
        got, recv_wall, recv_cpu = out.split()
    reached = nbytes * 8 / wall
    return {"link": link, "rate_bps": bps if shaped else None, "bytes": int(got),
            "seconds": round(wall, 3), "reached_bps": round(reached),
            "fraction": round(reached / bps, 3) if shaped else None,
            "sender_cpu": round(send_cpu / wall, 2),
            "receiver_cpu": round(float(recv_cpu) / float(recv_wall), 2),
            "host_busy": round((busy1 - busy0) / max(total1 - total0, 1.0), 2),
            "burst_bytes": rates.burst_bytes(bps) if shaped else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("links", nargs="?", default=DEFAULT)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    hosts.check()
    hosts.sweep()
    rows = []
    print(f"{'link':>9s} {'reached':>12s} {'fraction':>8s} {'sender cpu':>10s} "
          f"{'receiver cpu':>12s} {'host busy':>9s} {'seconds':>7s}")
    for link in args.links.split(","):
        link = link if link == "none" else rates.canonical(link)
        t = time.monotonic()
        row = transfer(link, args.seconds)
        rows.append(row)
        frac = f"{row['fraction']:.3f}" if row["fraction"] is not None else "-"
        print(f"{link:>9s} {row['reached_bps'] / 1e9:8.3f} Gb/s {frac:>8s} "
              f"{row['sender_cpu']:10.2f} {row['receiver_cpu']:12.2f} {row['host_busy']:9.2f} "
              f"{time.monotonic() - t:7.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

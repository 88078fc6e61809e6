"""What crossed the wire, counted by a rank inside its emulated host.

A rank started across emulated hosts (hvd_vs_ddp/cli/link_launch.py) gets the link's
rate (HVD_VS_DDP_LINK) and interface (HVD_VS_DDP_LINK_IFACE); its interface's counters
in /sys/class/net/<iface>/statistics are its host's own (`ip netns exec` mounts the
namespace's sysfs), and with one rank per host they are that rank's traffic. The
throughput suite reads `tx_bytes()` just before and after its timed rounds, so the
initial broadcast, warm-up and other suites are left out, and records the difference
over the timed steps beside the model's gradient bytes and a ring allreduce's 2(n-1)/n
of them (docs/results-format.md, `wire`).

    from hvd_vs_ddp.links import wire
    wire.link()        # '1gbit', or None on loopback
    wire.tx_bytes()    # bytes this host has sent on the link, or None
"""
from __future__ import annotations

import os
from pathlib import Path

LINK_ENV = "HVD_VS_DDP_LINK"
IFACE_ENV = "HVD_VS_DDP_LINK_IFACE"


def link() -> str | None:
    return os.environ.get(LINK_ENV) or None


def iface() -> str | None:
    return os.environ.get(IFACE_ENV) or None


def counter(name: str, device: str | None = None) -> int | None:
    """A statistics counter of the link's interface (tx_bytes, rx_bytes, tx_packets...);
    None when this rank is not on an emulated link or the counter cannot be read."""
    device = device or iface()
    if not device:
        return None
    try:
        return int(Path(f"/sys/class/net/{device}/statistics/{name}").read_text())
    except (OSError, ValueError):
        return None


def tx_bytes(device: str | None = None) -> int | None:
    return counter("tx_bytes", device)

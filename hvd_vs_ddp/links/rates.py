"""Link rates: a user's `--link-rate` text -> checked rates, and the token bucket for each.

A link is either `loopback` (today's cells: every rank on this host, no wire) or a rate
in bits per second written as tc writes one: a number and `kbit`, `mbit` or `gbit`
(decimal: 1gbit = 10^9 bit/s), e.g. `0.5gbit`, `500mbit`, `4gbit`. Each rate has one
canonical name (the largest unit that writes it as a whole number: `0.5gbit` ->
`500mbit`), which names its cells (`-link500mbit`) and is recorded in results.

The shaping is Linux's token-bucket filter on each end of the link (`tbf_argv`): the
bucket (burst) must hold at least one whole packet the device hands it, else every
larger packet is dropped and TCP stalls until it gives up (a veth's 1500-byte MTU, but
with GSO a packet can reach 64 KiB: hence 64 KiB at least), and must grow with the rate
so that one timer tick (HZ = 250 on this kernel, 4 ms) of tokens fits: rate / 250 bytes
(`burst_bytes`). Only the rate is emulated; no delay is added (tc's netem is not
available here), so a link's round trip is the veth's own (tens of microseconds) plus
what queues in the bucket.

    from hvd_vs_ddp.links import rates
    rates.parse_links("loopback,0.5gbit,1gbit")   # ('loopback', '500mbit', '1gbit')
    rates.bits_per_s("500mbit")                   # 500000000
    rates.burst_bytes(10**9)                      # 500000
    rates.transfer_seconds(95e6, "1gbit")         # 0.76
"""
from __future__ import annotations

import re

from hvd_vs_ddp.common.errors import InputError

LOOPBACK = "loopback"
UNITS = {"kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
MIN_BPS = 10**6        # 1 mbit: below it a resnet50 step would take minutes
MAX_BPS = 100 * 10**9  # 100 gbit: far beyond what a veth carries on a CPU
HZ = 250               # the kernel's timer ticks per second the bucket must span
MIN_BURST = 64 * 1024  # one GSO packet; below the MTU TCP stalls (docs/links.md)
LATENCY_MS = 50        # how long a packet may queue in the bucket before it is dropped

_RATE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(kbit|mbit|gbit)", re.IGNORECASE)


class LinkError(InputError):
    pass


def bits_per_s(text: str) -> int:
    """'0.5gbit' -> 500000000; ValueError saying what was expected otherwise."""
    m = _RATE.fullmatch(str(text).strip())
    if not m:
        raise ValueError(f"{text!r} is not a link rate; expected {LOOPBACK} or a number "
                         "and kbit, mbit or gbit, e.g. 500mbit or 1gbit")
    bps = round(float(m.group(1)) * UNITS[m.group(2).lower()])
    if not MIN_BPS <= bps <= MAX_BPS:
        raise ValueError(f"{text!r}: a link rate between 1mbit and 100gbit")
    return bps


def name_of(bps: int) -> str:
    """The canonical name of a rate: the largest unit writing it whole (500mbit)."""
    for unit, scale in sorted(UNITS.items(), key=lambda u: -u[1]):
        if bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bit"


def canonical(text: str) -> str:
    """'loopback' or the canonical name of the rate `text` (ValueError if not one)."""
    t = str(text).strip().lower()
    return LOOPBACK if t == LOOPBACK else name_of(bits_per_s(t))


def parse_links(text: str) -> tuple[str, ...]:
    """'loopback,0.5gbit' -> ('loopback', '500mbit'): each canonical, in the order given,
    each once (LinkError, one line without the option's name, on a bad or repeated
    value)."""
    out: list[str] = []
    for part in str(text).split(","):
        try:
            name = canonical(part)
        except ValueError as exc:
            raise LinkError(str(exc)) from None
        if name in out:
            raise LinkError(f"{text!r}: {name} is named twice")
        out.append(name)
    return tuple(out)


def emulated(link: str | None) -> bool:
    """Does this link name a shaped wire between emulated hosts (not loopback)?"""
    return bool(link) and link != LOOPBACK


def burst_bytes(bps: int) -> int:
    """The token bucket's size: a GSO packet at least, one timer tick of tokens at most
    rate (see the module docstring)."""
    return max(MIN_BURST, bps // 8 // HZ)


def tbf_argv(iface: str, bps: int, latency_ms: int = LATENCY_MS) -> list[str]:
    """`tc qdisc replace ... tbf` for the egress of `iface` at `bps`."""
    return ["tc", "qdisc", "replace", "dev", iface, "root", "tbf", "rate", f"{bps}bit",
            "burst", f"{burst_bytes(bps)}b", "latency", f"{latency_ms}ms"]


def transfer_seconds(nbytes: float, link: str, efficiency: float = 1.0) -> float:
    """Seconds `nbytes` take over `link` at its rate times `efficiency` (the share of it
    TCP reaches, measured: docs/links.md); 0 on loopback (no wire)."""
    if not emulated(link):
        return 0.0
    return float(nbytes) * 8 / (bits_per_s(link) * efficiency)


def gradient_bytes(model) -> int:
    """The bytes of a torch model's trainable parameters' gradients: what an allreduce
    of them carries (a model on the meta device too: nothing is read)."""
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def ring_allreduce_bytes(grad_bytes: float, n: int) -> float:
    """What each rank sends in a ring allreduce of `grad_bytes`: 2 (n - 1) / n of them."""
    return 2 * (n - 1) / n * float(grad_bytes) if n > 1 else 0.0

"""Emulated hosts' parts that need no namespace: the link rates, the token
bucket's size, which namespaces a run's start sweeps, the refusal without root, and a
link's rate as the transfer time it implies.

    python -m pytest tests/unit/test_links.py -q
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.links import hosts, rates


@pytest.mark.parametrize("text,canonical", [
    ("loopback", ("loopback",)), ("0.5gbit", ("500mbit",)), ("1gbit,100MBIT", ("1gbit", "100mbit")),
    ("loopback, 1.5gbit ,4gbit", ("loopback", "1500mbit", "4gbit")), ("250kbit", None),
    ("2500kbit", ("2500kbit",)),
])
def test_link_rates_parse_to_one_canonical_name(text, canonical):
    if canonical is None:  # below 1 mbit
        with pytest.raises(InputError, match="between 1mbit and 100gbit"):
            rates.parse_links(text)
    else:
        assert rates.parse_links(text) == canonical


@pytest.mark.parametrize("bad,says", [
    ("1gb", "not a link rate"), ("fast", "not a link rate"), ("", "not a link rate"),
    ("1gbit,1000mbit", "named twice"), ("200gbit", "between"), ("-1gbit", "not a link rate"),
    ("1e9bit", "not a link rate"), ("loopback,loopback", "named twice"),
])
def test_bad_link_rates_are_one_line(bad, says):
    with pytest.raises(InputError, match=says) as exc:
        rates.parse_links(bad)
    assert "\n" not in str(exc.value)


def test_a_rate_has_one_name_and_its_bits():
    assert rates.bits_per_s("500mbit") == rates.bits_per_s("0.5gbit") == 500_000_000
    assert rates.name_of(1_500_000_000) == "1500mbit"
    assert not rates.emulated("loopback") and not rates.emulated(None)
    assert rates.emulated("1gbit")


@pytest.mark.parametrize("bps", [10**6, 10**8, 5 * 10**8, 10**9, 4 * 10**9, 10**11])
def test_the_bucket_holds_a_gso_packet_and_a_timer_tick(bps):
    burst = rates.burst_bytes(bps)
    assert burst >= 64 * 1024  # a GSO packet; below the MTU TCP stalls (tests/system)
    assert burst >= bps / 8 / rates.HZ  # one tick of tokens at the rate
    assert burst <= max(64 * 1024, bps / 8 / rates.HZ) + 1  # and no more
    argv = rates.tbf_argv("hvd0", bps)
    assert argv[:7] == ["tc", "qdisc", "replace", "dev", "hvd0", "root", "tbf"]
    assert argv[argv.index("rate") + 1] == f"{bps}bit"
    assert argv[argv.index("burst") + 1] == f"{burst}b"


def test_a_links_rate_reaches_the_model_as_the_transfer_time_it_implies():
    """resnet50's ~95 MB of gradients at 1 Gbit/s: 0.76 s of wire; half the
    rate, twice the time; a ring allreduce sends 2(n-1)/n of them; loopback: no wire."""
    grad = 95e6
    assert rates.transfer_seconds(grad, "1gbit") == pytest.approx(0.76)
    assert rates.transfer_seconds(grad, "500mbit") == pytest.approx(1.52)
    assert rates.transfer_seconds(grad, "1gbit", efficiency=0.95) == pytest.approx(0.76 / 0.95)
    assert rates.transfer_seconds(grad, "loopback") == 0.0
    assert rates.ring_allreduce_bytes(grad, 2) == pytest.approx(grad)
    assert rates.ring_allreduce_bytes(grad, 4) == pytest.approx(1.5 * grad)
    assert rates.ring_allreduce_bytes(grad, 1) == 0.0


def _dead_pid() -> tuple[int, int]:
    """A process that ran and is gone: its pid and its start time."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    ticks = hosts._start_ticks(proc.pid)
    proc.kill()
    proc.wait()
    assert ticks is not None
    return proc.pid, ticks


def test_a_dead_owners_namespaces_are_swept_a_live_ones_are_not(monkeypatch):
    pid, ticks = _dead_pid()
    live = f"hvdl-{hosts.owner_tag()}-1-1"
    dead = f"hvdl-{pid}-{ticks}-1-1"
    reused = f"hvdl-{hosts.owner_tag().split('-')[0]}-{ticks}-2-1"  # our pid, another start
    foreign = "hvdl-someone-else"  # not one of ours by its shape: never swept
    assert hosts.owner_alive(live) and hosts.owner_alive(foreign)
    assert not hosts.owner_alive(dead) and not hosts.owner_alive(reused)
    removed: list[str] = []
    monkeypatch.setattr(hosts, "namespaces", lambda: [live, dead, reused, foreign])
    monkeypatch.setattr(hosts, "remove", removed.append)
    assert hosts.sweep() == [dead, reused] == removed


def test_a_namespace_names_its_owner_and_stays_a_valid_name():
    hs = hosts.EmulatedHosts("1gbit")
    names = [h.netns for h in hs.hosts]
    assert all(hosts.owner_alive(n) for n in names)
    assert all(n.startswith(f"hvdl-{hosts.owner_tag()}-") for n in names)
    assert len(set(names)) == 2 and all(len(n) < 64 for n in names)
    assert hs.spec() == "hvd-node1:1,hvd-node2:1"
    assert hosts.EmulatedHosts("1gbit").hosts[0].netns != names[0]  # a new set, a new name


def test_without_root_one_line_before_anything_is_made(monkeypatch):
    monkeypatch.setattr(hosts.os, "geteuid", lambda: 1000)
    with pytest.raises(InputError, match="needs root") as exc:
        hosts.check()
    assert "\n" not in str(exc.value)


def test_without_ip_one_line(monkeypatch):
    monkeypatch.setattr(hosts.os, "geteuid", lambda: 0)
    monkeypatch.setattr(hosts.shutil, "which", lambda t: None if t == "ip" else "/bin/" + t)
    with pytest.raises(InputError, match="needs ip") as exc:
        hosts.check()
    assert "iproute2" in str(exc.value) and "\n" not in str(exc.value)


def test_only_two_hosts_and_only_a_rate():
    with pytest.raises(InputError, match="only 2 hosts"):
        hosts.EmulatedHosts("1gbit", n=3)
    with pytest.raises(InputError, match="need a rate"):
        hosts.EmulatedHosts("loopback")


def test_a_links_interrupt_time_is_not_foreign_load(monkeypatch):
    """The kernel's TCP work for a cell's own link runs in softirq, charged to no process:
    a cell across emulated hosts is metered without the host's irq and softirq time, so
    its link does not get its repetition left out as disturbed."""
    from hvd_vs_ddp.common import cpu_load

    stat = iter(["cpu 100 0 100 1000 0 0 0 0 0 0\\n",     # start: user system ...
                 "cpu 200 0 200 1100 0 0 400 0 0 0\\n",   # stop: 400 ticks of softirq more
                 "cpu 100 0 100 1000 0 0 0 0 0 0\\n",
                 "cpu 200 0 200 1100 0 0 400 0 0 0\\n"])

    class Stat:
        def __init__(self, *_a):
            self.line = next(stat)

        def __enter__(self):
            return self

        def __exit__(self, *_a):
            return False

        def readline(self):
            return self.line

    monkeypatch.setattr(cpu_load, "open", Stat, raising=False)
    monkeypatch.setattr(cpu_load, "own_seconds", lambda: 0.0)
    clock = iter([0.0, 1.0, 0.0, 1.0])
    monkeypatch.setattr(cpu_load.time, "monotonic", lambda: next(clock))
    with_irq, without = cpu_load.Meter(), cpu_load.Meter(irq=False)
    with_irq.start()
    counted = with_irq.stop()
    without.start()
    assert without.stop() == pytest.approx(200 / cpu_load._TICK)  # user+system only
    assert counted == pytest.approx(600 / cpu_load._TICK)

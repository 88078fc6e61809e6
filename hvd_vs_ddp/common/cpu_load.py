"""How much of the host's CPU went to processes other than ours while a job ran.

`Meter.start()` before launching a job, `Meter.stop()` once it has ended and been
waited for: the host's busy CPU seconds (/proc/stat) minus the CPU seconds of this
process and of its waited-for descendants (getrusage), per second of wall time, is
the *foreign load* in cores. A repetition measured while something else kept a core
busy is slower for reasons that have nothing to do with the library it measures;
`hvd-vs-ddp run` records this figure per repetition and the report leaves such
repetitions out of its verdicts (docs/results-format.md).

Limits: only this host (ranks on other hosts are not seen); a descendant that was
never waited for (an orphan) counts as foreign; kernel threads count as foreign
(about 0.03 cores on an idle machine here). Linux only.

A job whose ranks talk over a network link on this host (cells across emulated hosts,
hvd_vs_ddp/links/) makes the kernel do its TCP work in interrupt context (irq, softirq:
ksoftirqd included), which no process's rusage is charged with: `Meter(irq=False)`
leaves the host's irq and softirq time out of the busy seconds, so that a cell's own
link does not count as foreign load (nor, then, would another job's network traffic).

    meter = Meter(); meter.start(); run_job(); foreign_cores = meter.stop()
    python -m hvd_vs_ddp.common.cpu_load 5     # the foreign load over 5 s (nothing of ours runs)
"""
from __future__ import annotations

import os
import resource
import sys
import time

_TICK = os.sysconf("SC_CLK_TCK")


def host_busy_seconds(irq: bool = True) -> float | None:
    """CPU seconds the host spent not idle since boot, all CPUs (`irq=False`: without the
    time in hard and soft interrupts); None off Linux."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal guest guest_nice
    user, nice, system, _idle, _iowait, irq_, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + steal + ((irq_ + softirq) if irq else 0)) / _TICK


def own_seconds() -> float:
    """CPU seconds of this process and its waited-for descendants."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Meter:
    def __init__(self, irq: bool = True) -> None:
        self.irq = irq  # False: interrupt time is not foreign (a job on a local link)

    def start(self) -> None:
        self.busy0, self.own0, self.t0 = (host_busy_seconds(self.irq), own_seconds(),
                                          time.monotonic())

    def stop(self) -> float | None:
        """Foreign load in cores since start() (>= 0), or None where it cannot be told."""
        busy, wall = host_busy_seconds(self.irq), time.monotonic() - self.t0
        if busy is None or self.busy0 is None or wall <= 0:
            return None
        foreign = (busy - self.busy0) - (own_seconds() - self.own0)
        return round(max(0.0, foreign / wall), 2)


if __name__ == "__main__":
    m = Meter()
    m.start()
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
    print(f"foreign load: {m.stop()} cores of {os.cpu_count()}")

"""Host CPU of one rank over the timed window: its own process, its threads, its loaders.

What competes for a host's cores while a data-parallel job trains: the training (main)
thread, each library's own threads (DDP's Gloo threads, `gloo_tcp_loop` and
`pt_gloo_runloop`; Horovod's background thread, which has no name of its own, and its
Gloo or MPI threads), torch's intra-op threads, and the DataLoader's worker processes
that decode and augment the input. `HostCpu` reads, at the start and the end of the
timed rounds, the CPU seconds (user + system, psutil) of the rank's process, of each of
its threads (by its kernel name, /proc/self/task/TID/comm) and of each loader worker
(the process's own total from its CPU-time clock, exact over a window of milliseconds;
the threads' and workers' from /proc, in 10 ms ticks), and gives each in cores: CPU
seconds / wall seconds of the window. A core's worth of work is 1.0; on a host with C
cores and R ranks, each rank has C / R to share.

    cpu = HostCpu(trainer.loader_pids); cpu.start(); ...timed steps...; usage = cpu.stop()
    python -m hvd_vs_ddp.harness.host_cpu          # this process's threads, busy for 1 s
"""
from __future__ import annotations

import os
import time
from typing import Callable

import psutil

MAIN = "main thread"
OTHER = "other threads"  # unnamed threads: Horovod's background thread, intra-op pool


def _thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def thread_group(tid: int, name: str, pid: int, process_name: str) -> str:
    """The group a thread's CPU is counted in: the main thread, a named thread by its
    name ('gloo_tcp_loop', 'pt_gloo_runloop'...), every unnamed one (it carries the
    process's name) together."""
    if tid == pid:
        return MAIN
    return OTHER if name in (process_name, "?", "") else name


def _cpu(times) -> float:
    return float(times.user + times.system)


class HostCpu:
    """CPU of this rank's process, threads and loader workers between start() and stop()."""

    def __init__(self, loader_pids: Callable[[], list[int]] = lambda: []) -> None:
        self.loader_pids = loader_pids
        self.proc = psutil.Process()
        self._start: tuple[float, float, dict, dict] | None = None  # wall, cpu, threads, loaders

    def _threads(self) -> dict[int, tuple[str, float]]:
        return {t.id: (_thread_name(t.id), t.user_time + t.system_time)
                for t in self.proc.threads()}

    def _loaders(self) -> dict[int, float]:
        out = {}
        for pid in self.loader_pids():
            try:
                out[pid] = _cpu(psutil.Process(pid).cpu_times())
            except psutil.Error:  # a worker that ended: its CPU is lost, not guessed
                continue
        return out

    def start(self) -> None:
        self._start = (time.perf_counter(), time.process_time(), self._threads(),
                       self._loaders())

    def stop(self) -> dict:
        """{"wall_s", "host_cpu_cores", "loader_cpu_cores", "loader_workers", "threads":
        {group: cores}}; host_cpu_cores is the whole process (every thread)."""
        if self._start is None:
            raise RuntimeError("HostCpu.stop() before start()")
        t0, cpu0, threads0, loaders0 = self._start
        wall = max(time.perf_counter() - t0, 1e-9)
        # the process's own CPU from its CPU-time clock (nanoseconds): /proc's counters,
        # which the threads and loaders are read from, tick every 10 ms, and a short
        # window (2 steps of a small model) read them as 0 cores
        cpu1, threads1, loaders1 = time.process_time(), self._threads(), self._loaders()
        pid, pname = self.proc.pid, self.proc.name()
        groups: dict[str, float] = {}
        for tid, (name, used) in threads1.items():
            spent = used - threads0.get(tid, (name, 0.0))[1]
            key = thread_group(tid, name, pid, pname)
            groups[key] = groups.get(key, 0.0) + max(spent, 0.0)
        loader = sum(max(used - loaders0.get(p, 0.0), 0.0) for p, used in loaders1.items())
        return {"wall_s": round(wall, 4), "host_cpu_cores": round(max(cpu1 - cpu0, 0.0) / wall, 4),
                "loader_cpu_cores": round(loader / wall, 4), "loader_workers": len(loaders1),
                "threads": {k: round(v / wall, 4) for k, v in sorted(groups.items())}}


if __name__ == "__main__":
    cpu = HostCpu()
    cpu.start()
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        pass
    print(f"pid {os.getpid()}: {cpu.stop()}")

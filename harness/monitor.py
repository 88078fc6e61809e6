"""Samples utilisation and memory of this rank while a benchmark runs.

psutil for the process (CPU percent, resident memory); NVML (nvidia-ml-py) for
this rank's GPU when there is one: utilisation and memory used. A daemon thread
samples every `interval_s`; `stop()` takes a last sample and returns the series.

    with Monitor(rank=0, gpu_index=None) as mon: ...; series = mon.series
"""
from __future__ import annotations

import threading
import time
from typing import Any

import psutil


class Monitor:
    def __init__(self, rank: int, gpu_index: int | None = None, interval_s: float = 0.5) -> None:
        self.rank, self.interval_s = rank, interval_s
        self.proc = psutil.Process()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.series: dict[str, Any] = {"rank": rank, "t": [], "cpu_percent": [], "rss_mb": [],
                                       "gpu_util": None, "gpu_mem_mb": None}
        self._nvml = self._gpu_handle(gpu_index)

    def _gpu_handle(self, gpu_index: int | None):
        if gpu_index is None:
            return None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.series["gpu_util"], self.series["gpu_mem_mb"] = [], []
            return pynvml.nvmlDeviceGetHandleByIndex(gpu_index)
        except Exception:  # no NVML: CPU series only
            return None

    def _sample(self, t0: float) -> None:
        s = self.series
        s["t"].append(round(time.monotonic() - t0, 3))
        s["cpu_percent"].append(self.proc.cpu_percent(None))
        s["rss_mb"].append(round(self.proc.memory_info().rss / 2**20, 1))
        if self._nvml is not None:
            import pynvml

            s["gpu_util"].append(pynvml.nvmlDeviceGetUtilizationRates(self._nvml).gpu)
            s["gpu_mem_mb"].append(round(pynvml.nvmlDeviceGetMemoryInfo(self._nvml).used
                                         / 2**20, 1))

    def _run(self) -> None:
        self.proc.cpu_percent(None)
        while not self._stop.wait(self.interval_s):
            self._sample(self._t0)

    def start(self) -> "Monitor":
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name="hvd-vs-ddp-monitor")
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            if not self._thread.is_alive():  # the end state: even a short run has a sample
                self._sample(self._t0)
            self._thread = None
        return self.series

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

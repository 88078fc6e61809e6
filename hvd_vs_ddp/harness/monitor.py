"""Samples utilisation and memory of this rank while a benchmark runs.

psutil for the process (CPU percent, resident memory); NVML (nvidia-ml-py) for
this rank's GPU when there is one: utilisation and memory used, and the energy the GPU
used between start() and stop() (`gpu_energy_j`, from NVML's total-energy counter; None
without a GPU or on a GPU without the counter). A daemon thread samples every
`interval_s`; `stop()` takes a last sample and returns the series.

`gpu_index` is the CUDA device index of this process (torch.device("cuda", i)).
NVML numbers every GPU of the host in PCI order and ignores CUDA_VISIBLE_DEVICES,
so NVML's index i is another GPU as soon as CUDA_VISIBLE_DEVICES remaps (a
scheduler giving this job GPUs 4-7): the GPU is found by its UUID instead, and
the series names it ("gpu": cuda index, uuid, NVML index).

    with Monitor(rank=0, gpu_index=None) as mon: ...; series = mon.series
"""
from __future__ import annotations

import os
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
                                       "gpu_util": None, "gpu_mem_mb": None,
                                       "gpu_energy_j": None}
        self._nvml = self._gpu_handle(gpu_index)
        self._energy0: int | None = None

    def _gpu_handle(self, gpu_index: int | None):
        if gpu_index is None:
            return None
        try:
            import pynvml

            pynvml.nvmlInit()
            handle, uuid = nvml_handle(pynvml, gpu_index)
            self.series["gpu"] = {"cuda_index": gpu_index, "uuid": uuid,
                                  "nvml_index": pynvml.nvmlDeviceGetIndex(handle)}
            self.series["gpu_util"], self.series["gpu_mem_mb"] = [], []
            return handle
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

    def _energy_mj(self) -> int | None:
        """NVML's total energy counter of this GPU (mJ since the driver loaded), or None."""
        if self._nvml is None:
            return None
        try:
            import pynvml

            return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(self._nvml))
        except Exception:  # a GPU without the counter (before Volta), or NVML gone
            return None

    def _run(self) -> None:
        self.proc.cpu_percent(None)
        while not self._stop.wait(self.interval_s):
            self._sample(self._t0)

    def start(self) -> "Monitor":
        self._t0 = time.monotonic()
        self._energy0 = self._energy_mj()
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
            end = self._energy_mj()
            if self._energy0 is not None and end is not None and end >= self._energy0:
                self.series["gpu_energy_j"] = (end - self._energy0) / 1000.0
        return self.series

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def visible_device(cuda_index: int, visible: str | None) -> str | None:
    """The CUDA_VISIBLE_DEVICES entry behind CUDA index `cuda_index` ("3", "GPU-<uuid>"),
    the index itself when the variable is unset, None when the index is not visible."""
    if visible is None:
        return str(cuda_index)
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    return entries[cuda_index] if 0 <= cuda_index < len(entries) else None


def _cuda_uuid(cuda_index: int) -> str | None:
    try:
        import torch

        uuid = getattr(torch.cuda.get_device_properties(cuda_index), "uuid", None)
    except Exception:  # no CUDA here
        return None
    return f"GPU-{uuid}" if uuid is not None else None


def nvml_handle(pynvml, cuda_index: int):
    """(NVML handle, UUID) of this process's CUDA device `cuda_index`."""
    uuid = _cuda_uuid(cuda_index)
    if uuid is None:  # old torch: trust CUDA_VISIBLE_DEVICES (NVML and CUDA order by PCI bus)
        entry = visible_device(cuda_index, os.environ.get("CUDA_VISIBLE_DEVICES"))
        if entry is None:
            raise LookupError(f"CUDA device {cuda_index} is not in CUDA_VISIBLE_DEVICES")
        if not entry.startswith(("GPU-", "MIG-")):
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(entry))
            return handle, _decode(pynvml.nvmlDeviceGetUUID(handle))
        uuid = entry
    try:
        return pynvml.nvmlDeviceGetHandleByUUID(uuid), uuid
    except TypeError:  # older nvidia-ml-py wants bytes
        return pynvml.nvmlDeviceGetHandleByUUID(uuid.encode()), uuid


def _decode(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

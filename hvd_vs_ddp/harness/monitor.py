"""Samples utilisation and memory of this rank while a benchmark runs.

psutil for the process (CPU percent, resident memory); NVML (nvidia-ml-py) for
this rank's GPU when there is one: utilisation and memory used, and the energy the GPU
used between start() and stop() (`gpu_energy_j`, from NVML's total-energy counter; None
without a GPU or on a GPU without the counter). A daemon thread samples every
`interval_s`; `stop()` takes a last sample and returns the series.

`gpu_index` is the CUDA device index of this process (torch.device("cuda", i)), or the
list of every GPU it trains on (DataParallel): then utilisation is their mean, memory and
energy their sums, and `*_per_gpu` keep each GPU's own (energy per sample divides the
energy of all of dp's GPUs, so all of them must be read, not only cuda:0).
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
from typing import Any, Sequence

import psutil

from hvd_vs_ddp.backends import placement


class Monitor:
    def __init__(self, rank: int, gpu_index: int | Sequence[int] | None = None,
                 interval_s: float = 0.5) -> None:
        self.rank, self.interval_s = rank, interval_s
        self.proc = psutil.Process()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.series: dict[str, Any] = {"rank": rank, "t": [], "cpu_percent": [], "rss_mb": [],
                                       "gpu_util": None, "gpu_mem_mb": None,
                                       "gpu_energy_j": None}
        indices = [] if gpu_index is None else \
            [gpu_index] if isinstance(gpu_index, int) else list(gpu_index)
        self._handles = self._gpu_handles(indices)
        self._nvml = self._handles[0] if self._handles else None
        self._energy0: list[int | None] = []

    def _gpu_handles(self, indices: list[int]) -> list:
        """One NVML handle per GPU this rank trains on (DataParallel: all of them);
        `series["gpu"]` names the first, `series["gpus"]` every one when there are more."""
        if not indices:
            return []
        try:
            import pynvml

            pynvml.nvmlInit()
            handles, named = [], []
            for index in indices:
                handle, uuid = nvml_handle(pynvml, index)
                handles.append(handle)
                named.append({"cuda_index": index, "uuid": uuid,
                              "nvml_index": pynvml.nvmlDeviceGetIndex(handle)})
            self.series["gpu"] = named[0]
            if len(named) > 1:
                self.series["gpus"] = named
                self.series["gpu_util_per_gpu"] = [[] for _ in named]
                self.series["gpu_mem_mb_per_gpu"] = [[] for _ in named]
            self.series["gpu_util"], self.series["gpu_mem_mb"] = [], []
            return handles
        except Exception:  # no NVML: CPU series only
            return []

    def _sample(self, t0: float) -> None:
        s = self.series
        s["t"].append(round(time.monotonic() - t0, 3))
        s["cpu_percent"].append(self.proc.cpu_percent(None))
        s["rss_mb"].append(round(self.proc.memory_info().rss / 2**20, 1))
        if self._handles:
            import pynvml

            util = [pynvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self._handles]
            mem = [round(pynvml.nvmlDeviceGetMemoryInfo(h).used / 2**20, 1)
                   for h in self._handles]
            # one GPU: its own figures; several (dp): mean utilisation, memory summed
            s["gpu_util"].append(util[0] if len(util) == 1 else sum(util) / len(util))
            s["gpu_mem_mb"].append(mem[0] if len(mem) == 1 else round(sum(mem), 1))
            if len(self._handles) > 1:
                for i, (u, m) in enumerate(zip(util, mem)):
                    s["gpu_util_per_gpu"][i].append(u)
                    s["gpu_mem_mb_per_gpu"][i].append(m)

    def _energy_mj(self) -> list[int | None]:
        """NVML's total energy counter of each GPU (mJ since the driver loaded), or None."""
        out: list[int | None] = []
        for handle in self._handles:
            try:
                import pynvml

                out.append(int(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)))
            except Exception:  # a GPU without the counter (before Volta), or NVML gone
                out.append(None)
        return out

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
            used = [(e - b) / 1000.0 for b, e in zip(self._energy0, end)
                    if b is not None and e is not None and e >= b]
            if used and len(used) == len(self._handles):  # every GPU's, or none
                self.series["gpu_energy_j"] = sum(used)  # DataParallel: all of its GPUs
                if len(used) > 1:
                    self.series["gpu_energy_j_per_gpu"] = used
        return self.series

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def visible_device(cuda_index: int, visible: str | None) -> str | None:
    """The CUDA_VISIBLE_DEVICES entry behind CUDA index `cuda_index` ("3", "GPU-<uuid>"),
    the index itself when the variable is unset, None when the index is not visible (read
    as the placement reads it: hvd_vs_ddp/backends/placement.py visible_devices)."""
    if visible is None:
        return str(cuda_index)
    names = placement.visible_devices({"CUDA_VISIBLE_DEVICES": visible}, cuda_index + 1)
    return names[cuda_index] if 0 <= cuda_index < len(names) else None


def nvml_handle(pynvml, cuda_index: int):
    """(NVML handle, UUID) of this process's CUDA device `cuda_index`."""
    uuid = placement.gpu_uuid(cuda_index)
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

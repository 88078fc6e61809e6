"""DataParallel (dp) on several GPUs.

- the monitor takes every GPU dp trains on (the cost divides by all of them; cuda:0 alone
  would under-read energy per sample about N-fold): energy and memory summed,
  utilisation averaged, each GPU's own kept. NVML here is a stand-in module (this
  machine has no GPU; NVML is not what the rule forbids mocking).
- with the bf16 knob, dp's replicas run bf16: torch's parallel_apply re-enters autocast
  in each replica's thread without a dtype, and a thread starts at its default (fp16 on
  CUDA) unless the caller's dtype is kept (backends/local.py). The same happens on the
  CPU's autocast, so it is shown there with real threads.

    python -m pytest -p no:cacheprovider tests/unit/test_placement_dp.py -q
"""
from __future__ import annotations

import sys
import threading
import types

import torch

from hvd_vs_ddp.backends.local import replicas_keep_autocast_dtype
from hvd_vs_ddp.harness.monitor import Monitor


def _replica_dtype(keep: bool) -> torch.dtype:
    """What a replica computes in when the caller asked for float16 on the CPU (whose
    per-thread default is bfloat16), run the way parallel_apply runs it."""
    layer = torch.nn.Linear(4, 4)
    out: list[torch.dtype] = []

    def worker(module) -> None:  # torch/nn/parallel/parallel_apply.py's _worker
        with torch.amp.autocast("cpu", enabled=True):
            out.append(module(torch.ones(2, 4)).dtype)

    with torch.amp.autocast("cpu", dtype=torch.float16):
        if keep:
            with replicas_keep_autocast_dtype([layer], "cpu"):
                t = threading.Thread(target=worker, args=(layer,))
                t.start()
                t.join()
        else:
            t = threading.Thread(target=worker, args=(layer,))
            t.start()
            t.join()
    return out[0]


def test_a_replica_thread_computes_in_the_callers_autocast_dtype():
    assert _replica_dtype(keep=False) == torch.bfloat16  # the bug: the thread's default
    assert _replica_dtype(keep=True) == torch.float16


def test_dp_uses_the_dtype_keeping_data_parallel():
    from hvd_vs_ddp.backends import local

    assert issubclass(local._DataParallel, torch.nn.DataParallel)
    assert "parallel_apply" in vars(local._DataParallel)


class _FakeNVML(types.ModuleType):
    """Two GPUs; each reads 1000 mJ more energy at every look, GPU i at (i + 1) * 10 %."""

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.energy = [0, 50_000]

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{h}"

    def nvmlDeviceGetIndex(self, h):
        return h

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=(h + 1) * 10)

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=(h + 1) * 2**30)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self.energy[h] += 1000 * (h + 1)
        return self.energy[h]


def test_the_monitor_reads_every_gpu_dp_trains_on(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNVML())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with Monitor(0, [0, 1], interval_s=60) as mon:
        pass
    s = mon.series
    assert [g["uuid"] for g in s["gpus"]] == ["GPU-0", "GPU-1"]
    assert s["gpu_energy_j"] == 3.0 and s["gpu_energy_j_per_gpu"] == [1.0, 2.0]
    assert s["gpu_mem_mb"] == [3072.0] and s["gpu_util"] == [15.0]
    assert s["gpu_util_per_gpu"] == [[10], [20]]
    with Monitor(0, 1, interval_s=60) as one:  # one GPU: its own figures, as before
        pass
    assert one.series["gpu"]["uuid"] == "GPU-1" and "gpus" not in one.series
    assert one.series["gpu_energy_j"] == 2.0 and one.series["gpu_mem_mb"] == [2048.0]

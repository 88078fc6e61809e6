"""Records of suites/test_throughput.py: throughput and compute_only.

throughput: one (backend, workload, knob set) timed over fixed rounds. step_times and
samples_per_s have one value per timed step (the slowest rank's), rank_step_times one
row per rank with every timed step's seconds, so all three have equal lengths.
ddp_stats (DDP only): DDP's own runtime statistics of the timed steps, per rank
(hvd_vs_ddp/harness/ddp_stats.py). Compiled tests (knobs "compile", docs/compile.md) add
compile_mode, compile_s, compile_steps, graphs, graph_breaks, recompiles_timed and
compile_info (hvd_vs_ddp/harness/compile_stats.py). loss_check (knob sets that change the
maths only): its mean loss against `single`'s and the set's bound
(hvd_vs_ddp/harness/loss_bound.py). The input pipeline (hvd_vs_ddp/workloads/jpeg_set.py,
optional fields, absent on runs before it): input_mode ("memory": tensors in memory
through a DataLoader; "jpeg": JPEG files decoded and augmented by DataLoader workers on the
host; "device": a few ready batches on the device, rotated: hvd_vs_ddp/workloads/feed.py),
loader_workers, pin_memory, data_wait_s (per timed step, the longest any rank waited for
its batch), host_cpu_cores and loader_cpu_cores (CPU of each rank's process and of its
loader workers over the timed rounds, in cores, the mean over ranks) and input_pipeline
(every rank's own, its threads by group, the JPEG set). How the figure was taken (optional,
absent on older runs): step_timer ("wall": the round's wall time shared by its steps;
"events": CUDA events around each step, read after the round), cudnn_benchmark (cuDNN's
autotuner on or off). pace_probe (both kinds, optional, absent on older runs): every
rank's pace probe, a fixed piece of CPU work timed before the backend was set up and
after the timed rounds, with the process's scheduling counters
(hvd_vs_ddp/harness/pace.py; run_model/pace.py reads it). compute_only: the same
per-rank step with no communication, run by `concurrent_ranks` processes at once (for
exposed communication).

    rec = ThroughputRecord(backend="ddp-gloo", world_size=2, launcher="torchrun", ...)
    benchmark.extra_info.update(rec.to_dict())
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hvd_vs_ddp.common.input_modes import INPUT_MODES
from hvd_vs_ddp.results_schema import summary
from hvd_vs_ddp.results_schema.fields import (
    Invalid,
    flag,
    integer,
    listof,
    mapping,
    nullable,
    number,
    numbers,
    one_of,
    opt,
    req,
    text,
)
from hvd_vs_ddp.results_schema.kinds.base import BenchmarkRecord, array, as_json

_times = listof(number(0), nonempty=True)
STEP_TIMERS = ("wall", "events")  # how step_times were taken (hvd_vs_ddp/workloads/loop.py)
_per_rank = listof(nullable(number(0)))


HELD = ("param_bytes", "grad_bytes", "optim_state_bytes")


def _memory(v: Any, name: str, finite: bool) -> None:
    """{"max_rss_mb": [per rank], "cuda_max_allocated_mb": [per rank] or null, and
    optionally "param_bytes", "grad_bytes", "optim_state_bytes": [per rank], the local
    storage each rank holds after the timed steps (hvd_vs_ddp/backends/held_bytes.py), and
    "cuda_per_device_mb": [per GPU] peak memory of `dp` over >= 2 GPUs}."""
    mapping(v, name, finite)
    _per_rank(v.get("max_rss_mb", []), f"{name}.max_rss_mb", finite)
    nullable(_per_rank)(v.get("cuda_max_allocated_mb"), f"{name}.cuda_max_allocated_mb", finite)
    for key in HELD:
        nullable(listof(integer(0)))(v.get(key), f"{name}.{key}", finite)
    nullable(listof(number(0)))(v.get("cuda_per_device_mb"), f"{name}.cuda_per_device_mb",
                                finite)


def _monitor(v: Any, name: str, finite: bool) -> None:
    """{"interval_s", "ranks": [{"rank", "t", "cpu_percent", "rss_mb", "gpu_util",
    "gpu_mem_mb", "gpu_energy_j"}]}: every series a list of finite numbers or null;
    gpu_energy_j (the GPU's energy over the timed rounds) a number >= 0 or null."""
    mapping(v, name, finite)
    ranks = v.get("ranks", [])
    listof(mapping)(ranks, f"{name}.ranks", finite)
    for i, r in enumerate(ranks):
        nullable(number(0))(r.get("gpu_energy_j"), f"{name}.ranks[{i}].gpu_energy_j", finite)
        for key, series in r.items():
            if isinstance(series, list):
                numbers(series, f"{name}.ranks[{i}].{key}", finite)


_DDP_SERIES = ("forward_compute_s", "backward_compute_s", "backward_comm_s", "overlap_s",
               "backward_compute_end_ns", "backward_comm_end_ns")


def _ddp_stats(v: Any, name: str, finite: bool) -> None:
    """{"sample_rate", "bucket_cap_bytes", "bucket_sizes", ..., "ranks": [{"rank",
    "iterations", <series>...} or null]}: every rank's series as long as its iterations."""
    mapping(v, name, finite)
    integer(0)(v.get("sample_rate", 0), f"{name}.sample_rate", finite)
    listof(integer(0))(v.get("bucket_sizes", []), f"{name}.bucket_sizes", finite)
    ranks = v.get("ranks", [])
    listof(nullable(mapping))(ranks, f"{name}.ranks", finite)
    for i, r in enumerate(ranks):
        if r is None:
            continue
        n = len(r.get("iterations", []))
        for key in _DDP_SERIES:
            series = r.get(key, [])
            listof(number(0))(series, f"{name}.ranks[{i}].{key}", finite)
            if len(series) != n:
                raise Invalid(f"{name}.ranks[{i}].{key}", f"has {len(series)} values; "
                              f"expected {n} (one per iteration)")


def _compile_info(v: Any, name: str, finite: bool) -> None:
    """{"optimize_ddp", "compiled_autograd", "cache", "warmup_step_s": [per warm-up step,
    the slowest rank's seconds], "warmup_events": [compile events per warm-up step, the
    most on any rank], "still_compiling", "graph_break_reasons": {reason: count},
    "ddp_optimizer_buckets": [per graph], "ranks": [{"graphs", "graph_breaks",
    "recompiles_timed"}]}."""
    mapping(v, name, finite)
    listof(number(0))(v.get("warmup_step_s", []), f"{name}.warmup_step_s", finite)
    listof(integer(0))(v.get("warmup_events", []), f"{name}.warmup_events", finite)
    if len(v.get("warmup_step_s", [])) != len(v.get("warmup_events", [])):
        raise Invalid(f"{name}.warmup_events", "must have one value per warm-up step "
                      "(like warmup_step_s)")
    mapping(v.get("graph_break_reasons", {}), f"{name}.graph_break_reasons", finite)
    listof(mapping)(v.get("ranks", []), f"{name}.ranks", finite)


def _input_pipeline(v: Any, name: str, finite: bool) -> None:
    """{"cores": the host's, "jpeg_set": {"root", "images", "classes", "image_size",
    "source_px", "mean_file_kb"} or null, optionally "meaning": what the input mode was
    where it ran and "ready_batches" (mode "device"), "ranks": [{"rank", "wall_s",
    "host_cpu_cores",
    "loader_cpu_cores", "loader_workers", "threads": {group: cores}, "data_wait_s":
    [per timed step]}]}."""
    mapping(v, name, finite)
    nullable(mapping)(v.get("jpeg_set"), f"{name}.jpeg_set", finite)
    ranks = v.get("ranks", [])
    listof(mapping)(ranks, f"{name}.ranks", finite)
    for i, r in enumerate(ranks):
        where = f"{name}.ranks[{i}]"
        for key in ("host_cpu_cores", "loader_cpu_cores"):
            number(0)(r.get(key, 0), f"{where}.{key}", finite)
        mapping(r.get("threads", {}), f"{where}.threads", finite)
        for group, cores in r.get("threads", {}).items():
            number(0)(cores, f"{where}.threads.{group}", finite)
        listof(number(0))(r.get("data_wait_s", []), f"{where}.data_wait_s", finite)


_PACE_COUNTERS = ("nonvoluntary_switches", "voluntary_switches", "run_delay_s", "steal_s",
                  "anon_huge_mb")


def _pace_probe(v: Any, name: str, finite: bool) -> None:
    """{"unit", "pre_products", "post_products", "ranks": [{"pre": products/s before the
    backend was set up, "post": [products/s after the timed rounds], "threads",
    "process": {counter: number or null}}]} (hvd_vs_ddp/harness/pace.py)."""
    mapping(v, name, finite)
    text(v.get("unit", ""), f"{name}.unit", finite)
    ranks = v.get("ranks", [])
    listof(mapping, nonempty=True)(ranks, f"{name}.ranks", finite)
    for i, r in enumerate(ranks):
        where = f"{name}.ranks[{i}]"
        number(0)(r.get("pre"), f"{where}.pre", finite)
        listof(number(0), nonempty=True)(r.get("post"), f"{where}.post", finite)
        mapping(r.get("process", {}), f"{where}.process", finite)
        for key in _PACE_COUNTERS:
            nullable(number())(r.get("process", {}).get(key), f"{where}.process.{key}", finite)


def _wire(v: Any, name: str, finite: bool) -> None:
    """{"iface", "rate_bps", "timed_steps", "grad_bytes", "ring_bytes", "tx_bytes_per_step"
    (mean over ranks), "wire_over_ring", "ranks": [{"rank", "tx_bytes", "tx_bytes_per_step"}]}
    (suites/test_throughput.py; hvd_vs_ddp/links/wire.py)."""
    mapping(v, name, finite)
    for key in ("rate_bps", "timed_steps", "grad_bytes", "ring_bytes"):
        number(0)(v.get(key, 0), f"{name}.{key}", finite)
    for key in ("tx_bytes_per_step", "wire_over_ring"):
        nullable(number(0))(v.get(key), f"{name}.{key}", finite)
    listof(mapping)(v.get("ranks", []), f"{name}.ranks", finite)


def _equal_rows(step_times: list, rank_step_times: list | None, name: str) -> None:
    for i, row in enumerate(rank_step_times or []):
        if len(row) != len(step_times):
            raise Invalid(f"{name}[{i}]", f"has {len(row)} steps; expected {len(step_times)} "
                          "(one per timed step, like step_times)")


LOOPBACK = "loopback"  # a cell's link when it names none (hvd_vs_ddp/links/rates.py)


def _wire_value(wire: dict[str, Any] | None, key: str) -> float:
    value = (wire or {}).get(key)
    return float(value) if value is not None else np.nan


@dataclass(kw_only=True)
class ThroughputRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "throughput", "throughput", "throughput"

    workload: str = req(text)
    knobs: dict[str, Any] = req(mapping)
    per_rank_batch: int = req(integer(1))
    global_batch: int = req(integer(1))
    step_times: list[float] = req(_times)
    samples_per_s: list[float] = req(_times)
    workload_params: dict[str, Any] | None = opt(mapping)
    knob_set: str | None = opt(text)
    warmup_steps: int | None = opt(integer(0))
    steps_per_round: int | None = opt(integer(1))
    rounds: int | None = opt(integer(1))
    rank_step_times: list[list[float]] | None = opt(listof(listof(number(0))))
    samples_per_s_median: float | None = opt(number())
    samples_per_s_iqr: list[float] | None = opt(listof(number(), length=2))
    losses: list[float] | None = opt(numbers)
    memory: dict[str, Any] | None = opt(_memory)
    monitor: dict[str, Any] | None = opt(_monitor)
    ddp_stats: dict[str, Any] | None = opt(_ddp_stats)
    profile_traces: list[str] | None = opt(listof(text))
    startup_s: list[float] | None = opt(listof(number(0)))
    compile_mode: str | None = opt(text)
    compile_s: float | None = opt(number(0))
    compile_steps: int | None = opt(integer(0))
    graphs: int | None = opt(integer(0))
    graph_breaks: int | None = opt(integer(0))
    recompiles_timed: int | None = opt(integer(0))
    compile_info: dict[str, Any] | None = opt(_compile_info)
    loss_check: dict[str, Any] | None = opt(mapping)
    input_mode: str | None = opt(one_of(*INPUT_MODES))
    loader_workers: int | None = opt(integer(0))
    pin_memory: bool | None = opt(flag)
    data_wait_s: list[float] | None = opt(listof(number(0)))
    host_cpu_cores: float | None = opt(number(0))
    loader_cpu_cores: float | None = opt(number(0))
    input_pipeline: dict[str, Any] | None = opt(_input_pipeline)
    step_timer: str | None = opt(one_of(*STEP_TIMERS))
    cudnn_benchmark: bool | None = opt(flag)
    link: str | None = opt(text)  # the rate between emulated hosts; absent: loopback
    wire: dict[str, Any] | None = opt(_wire)  # what each rank's host sent on that link
    pace_probe: dict[str, Any] | None = opt(_pace_probe)

    def consistency(self) -> None:
        if self.data_wait_s is not None and len(self.data_wait_s) != len(self.step_times):
            raise Invalid("data_wait_s", f"has {len(self.data_wait_s)} values; expected "
                          f"{len(self.step_times)} (one per timed step, like step_times)")
        if len(self.samples_per_s) != len(self.step_times):
            raise Invalid("samples_per_s", f"has {len(self.samples_per_s)} values; expected "
                          f"{len(self.step_times)} (one per step_times value)")
        _equal_rows(self.step_times, self.rank_step_times, "rank_step_times")

    def rows(self) -> list[dict[str, Any]]:
        sps, steps = array(self.samples_per_s), array(self.step_times)
        mem = self.memory or {}
        rss = [v for v in mem.get("max_rss_mb") or [] if v is not None]
        cuda = [v for v in mem.get("cuda_max_allocated_mb") or [] if v is not None]
        q25, q75 = summary.iqr(sps)
        s25, s75 = summary.iqr(steps)
        return [{**self.common_row(), "workload": self.workload,
                 "workload_params": as_json(self.workload_params or {}),
                 "knob_set": self.knob_set or "default", "knobs": as_json(self.knobs),
                 "knobs_dict": self.knobs, "per_rank_batch": int(self.per_rank_batch),
                 "global_batch": int(self.global_batch), "samples": sps, "steps": steps,
                 "warmup_steps": int(self.warmup_steps or 0),
                 "sps_median": summary.median(sps), "sps_q25": q25, "sps_q75": q75,
                 "step_median": summary.median(steps), "step_q25": s25, "step_q75": s75,
                 "n_steps": int(sps.size), "max_rss_mb": max(rss) if rss else np.nan,
                 "rank_steps": (np.asarray(self.rank_step_times, dtype=float)
                                if self.rank_step_times else None),
                 "losses": list(self.losses) if self.losses else None,
                 "cuda_max_mb": max(cuda) if cuda else np.nan, "monitor": self.monitor,
                 "ddp_stats": self.ddp_stats, "profile_traces": self.profile_traces,
                 "startup_s": max(self.startup_s) if self.startup_s else np.nan,
                 "cuda_per_device_mb": mem.get("cuda_per_device_mb"),
                 "compile_mode": self.compile_mode or self.knobs.get("compile") or "eager",
                 **{key: (float(v) if (v := getattr(self, key)) is not None else np.nan)
                    for key in ("compile_s", "compile_steps", "graphs", "graph_breaks",
                                "recompiles_timed")},
                 "compile_info": self.compile_info,
                 "loss_check": self.loss_check,
                 "input_mode": self.input_mode or "memory",
                 "loader_workers": self.loader_workers, "pin_memory": self.pin_memory,
                 "data_wait": (array(self.data_wait_s) if self.data_wait_s is not None
                               else None),
                 "host_cpu_cores": (self.host_cpu_cores if self.host_cpu_cores is not None
                                    else np.nan),
                 "loader_cpu_cores": (self.loader_cpu_cores
                                      if self.loader_cpu_cores is not None else np.nan),
                 "input_pipeline": self.input_pipeline,
                 "step_timer": self.step_timer or "wall",
                 "cudnn_benchmark": self.cudnn_benchmark,
                 "link": self.link or LOOPBACK, "wire": self.wire,
                 "wire_bytes_per_step": _wire_value(self.wire, "tx_bytes_per_step"),
                 "grad_bytes": _wire_value(self.wire, "grad_bytes"),
                 "ring_bytes": _wire_value(self.wire, "ring_bytes"),
                 "pace_probe": self.pace_probe,
                 **{key: (max(mem[key]) if mem.get(key) else np.nan) for key in HELD}}]


@dataclass(kw_only=True)
class ComputeOnlyRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "compute_only", "compute", "compute_only"

    workload: str = req(text)
    knobs: dict[str, Any] = req(mapping)
    per_rank_batch: int = req(integer(1))
    step_times: list[float] = req(_times)
    workload_params: dict[str, Any] | None = opt(mapping)
    knob_set: str | None = opt(text)
    concurrent_ranks: int | None = opt(integer(1))
    rank_step_times: list[list[float]] | None = opt(listof(listof(number(0))))
    step_time_median: float | None = opt(number())
    input_mode: str | None = opt(one_of(*INPUT_MODES))
    pace_probe: dict[str, Any] | None = opt(_pace_probe)

    def consistency(self) -> None:
        _equal_rows(self.step_times, self.rank_step_times, "rank_step_times")

    def rows(self) -> list[dict[str, Any]]:
        ranks = self.concurrent_ranks if self.concurrent_ranks is not None else self.world_size
        return [{**self.common_row(), "workload": self.workload, "knobs": as_json(self.knobs),
                 "ranks": int(ranks), "per_rank_batch": int(self.per_rank_batch),
                 "input_mode": self.input_mode or "memory",
                 "steps": array(self.step_times),
                 "step_median": summary.median(array(self.step_times)),
                 "pace_probe": self.pace_probe}]

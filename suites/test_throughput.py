"""Throughput: identical workloads through every backend, timed whole steps.

Per (backend, workload, knob set): warm-up steps, then --rounds rounds of
--steps-per-round steps under benchmark.pedantic (fixed rounds: every rank runs
the same number). A step's time is the slowest rank's; samples/s = global batch
/ that time. Every rank's raw step times, the backend's metadata and the knobs
go into extra_info, and for DDP its own runtime statistics of the timed steps
(hvd_vs_ddp/harness/ddp_stats.py, --ddp-sample-rate). Also the compute-only step time of the
same per-rank batch (single process per rank, no communication) for exposed
communication. `--input jpeg` feeds image workloads from JPEG files decoded and augmented
by DataLoader workers on the host (`--loader-workers`, `--pin-memory`;
hvd_vs_ddp/workloads/jpeg_set.py) instead of tensors in memory, and records the time
each step waited for its batch and the host CPU of each rank, its threads and its
loader workers over the timed rounds (hvd_vs_ddp/harness/host_cpu.py). A knob set that
compiles (`--knob-set compile`, docs/compile.md) records
its compile time (the warm-up steps that compiled), graphs, graph breaks and recompiles
during the timed rounds apart (hvd_vs_ddp/harness/compile_stats.py); a backend that cannot
honour its compile mode is skipped with the reason. A knob set that changes the maths
(compression, PowerSGD, Adasum) has its mean loss compared with `single`'s against a bound
derived from the workload and run (hvd_vs_ddp/harness/loss_bound.py): beyond the bound the
cell keeps its throughput and records the deviation, the bound and the reference's own
sensitivity, marked (a warning here; the tuning report never crowns it); only a deviation
beyond the fault line (a broken reduction, not the compression's error) fails the cell.

    torchrun --standalone --nproc-per-node 2 -m pytest suites/test_throughput.py \
        --benchmark-json out.json
    horovodrun -np 2 pytest suites/test_throughput.py --input jpeg --workloads resnet50
"""
from __future__ import annotations

import dataclasses
import os
import time
import warnings
from typing import NamedTuple

import numpy as np
import pytest
import torch

from hvd_vs_ddp.backends import catalog, placement
from hvd_vs_ddp.backends.env import SINGLE
from hvd_vs_ddp.backends.held_bytes import held_bytes
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT, JPEG
from hvd_vs_ddp.harness import (
    compile_stats,
    loss_bound,
    pace,
    profiling,
    startup,
    suite_run,
    tuning,
)
from hvd_vs_ddp.harness.ddp_stats import DDPStats
from hvd_vs_ddp.harness.host_cpu import HostCpu
from hvd_vs_ddp.harness.knobs import SETS, by_name
from hvd_vs_ddp.harness.monitor import Monitor
from hvd_vs_ddp.links import rates, wire
from hvd_vs_ddp.results_schema import ComputeOnlyRecord, HorovodTimelineRecord, ThroughputRecord
from hvd_vs_ddp.workloads import compiling, feed, jpeg_set
from hvd_vs_ddp.workloads.external import slug  # a workload spec as a test id
from hvd_vs_ddp.workloads.loop import Trainer


def _cells(suite):
    name = suite.options.knob_set
    knob_sets = SETS[name] if name in SETS else (by_name(name),)
    for workload in suite.workloads:
        for knobs in knob_sets:
            yield workload, knobs


def _input_id(mode: str) -> str:
    return "" if mode == DEFAULT_INPUT else f"-{mode}"


def pytest_generate_tests(metafunc):
    suite = suite_run.of(metafunc.config)
    modes = suite.options.input
    if "throughput_cell" in metafunc.fixturenames:
        cells = [(b, w, k, m) for m in modes for w, k in _cells(suite) for b in suite.backends]
        metafunc.parametrize("throughput_cell", cells,
                             ids=[f"{b}-{slug(w)}-{k.name}{_input_id(m)}"
                                  for b, w, k, m in cells])
    if "compute_cell" in metafunc.fixturenames:
        cells = [(w, k, m) for m in modes for w, k in _cells(suite)]
        metafunc.parametrize("compute_cell", cells,
                             ids=[f"{slug(w)}-{k.name}{_input_id(m)}" for w, k, m in cells])


def _train_config(knobs, options, mode: str, workload):
    """The knob set's loop settings with the input mode `mode` (hvd_vs_ddp/workloads/feed.py:
    device, memory, jpeg): --input jpeg decodes with --loader-workers workers per rank;
    --pin-memory for the loader's modes; cuDNN's autotuner on, as Horovod's own benchmark
    sets it (losses are not compared step by step here). A workload the JPEG pipeline
    cannot feed is skipped (a fact every rank sees alike)."""
    if mode == JPEG:
        try:
            jpeg_set.image_shape(workload)
        except InputError as exc:
            pytest.skip(str(exc))
    pin = {"auto": None, "on": True, "off": False}[options.pin_memory]
    workers = options.loader_workers if mode == JPEG else knobs.num_workers
    return dataclasses.replace(knobs.train_config(steps=1), input_mode=mode,
                               num_workers=workers, pin_memory=pin,
                               jpeg_size=options.jpeg_size, cudnn_benchmark=True)


def _skip_gpu_only(knobs):
    if knobs.gpu_only and not torch.cuda.is_available():
        pytest.skip(f"knob set {knobs.name} needs a GPU")


class Timed(NamedTuple):
    times: list[float]               # this rank's seconds per timed step
    series: dict                     # monitor samples
    cuda_mb: float | None            # peak CUDA memory
    window: tuple[int, int] | None   # stats.mark() before and after the timed rounds
    starts: list[float]              # each timed step's start, seconds since the epoch
    waits: list[float]               # each timed step's wait for its batches, seconds
    cpu: dict                        # host CPU over the timed rounds (harness/host_cpu.py)
    pace: dict | None                # this rank's pace probes (harness/pace.py)
    tx_bytes: int | None = None      # bytes this rank's host sent on its emulated link
    #                                  during the timed rounds (hvd_vs_ddp/links/wire.py)


def _timed(benchmark, trainer, backend, suite, stats=None, watch=None) -> Timed:
    """Warm up (each step watched for compilation), then fixed rounds."""
    opts = suite.options
    warmup, rounds, per_round = opts.warmup_steps, opts.rounds, opts.steps_per_round
    watch = watch or compile_stats.CompileWatch("eager")
    for _ in range(warmup):
        watch.warmup_step(trainer)
    times: list[float] = []
    round_starts: list[float] = []
    sent: list[int] = []  # per round, on an emulated link (else empty)

    def one_round() -> None:
        round_starts.append(time.time())
        tx0 = wire.tx_bytes()
        times.extend(trainer.run(per_round))
        tx1 = wire.tx_bytes()
        if tx0 is not None and tx1 is not None:
            sent.append(tx1 - tx0)

    start = stats.mark() if stats is not None else 0
    gpu = backend.device.index if backend.device.type == "cuda" else None
    if gpu is not None:  # every GPU's peak over the same window (dp: all of them)
        for index in backend.devices_in_use() or [gpu]:
            torch.cuda.reset_peak_memory_stats(index)
    watch.start_timed()
    first = len(trainer.data_waits)
    cpu = HostCpu(trainer.loader_pids)
    before = pace.counters()
    with Monitor(backend.rank, backend.devices_in_use() or gpu) as mon:
        cpu.start()
        benchmark.pedantic(one_round, rounds=rounds, warmup_rounds=0, iterations=1)
        usage = cpu.stop()
    watch.end_timed()
    # the post probes, outside the timed window (harness/pace.py says why)
    probes = suite.pace.rank_summary(before) if suite.pace is not None else None
    window = (start, stats.mark()) if stats is not None else None
    cuda_mb = (torch.cuda.max_memory_allocated(backend.device) / 2**20) if gpu is not None else None
    # steps follow each other inside a round: a step starts when the one before ends
    starts = [t0 + float(sum(times[r * per_round:r * per_round + i]))
              for r, t0 in enumerate(round_starts) for i in range(per_round)]
    return Timed(times, mon.series, cuda_mb, window, starts, trainer.data_waits[first:], usage,
                 probes, sum(sent) if len(sent) == rounds else None)


def _slowest(rank_times: list[list[float]], per_round: int):
    per_step = np.max(np.asarray(rank_times), axis=0)  # a step ends when its slowest rank does
    per_round_means = per_step.reshape(-1, per_round).mean(axis=1)
    return per_step, per_round_means


def _replace_stats(benchmark, round_times) -> None:
    """pytest-benchmark timed this rank; the honest round time is the slowest rank's."""
    stats = benchmark.stats.stats
    stats.data = [float(t) for t in round_times]
    for attr in list(vars(stats)):
        if attr != "data":
            delattr(stats, attr)  # drop cached medians etc. of the local timings


def test_throughput(benchmark, suite, plugin, open_backend, make_workload, throughput_cell):
    name, workload_name, knobs, mode = throughput_cell
    _skip_gpu_only(knobs)
    if knobs.communicates and not catalog.get(name).distributed:
        pytest.skip(f"{name}: knob set {knobs.name} changes communication; nothing to compare")
    if not knobs.applies_to(name):
        pytest.skip(f"{name}: knob set {knobs.name} tunes {knobs.side} only")
    if knobs.hierarchical and plugin.env.local_size == plugin.env.world_size:
        pytest.skip(f"knob set {knobs.name}: hierarchical allreduce needs more than one host")
    # what the backend cannot run under this launch, or its declaration does not honour,
    # or a compile mode it cannot honour: judged once in the cell's plan
    # (hvd_vs_ddp/harness/cell_plan.py), the same on every rank, so a collective skip
    conflict = suite.plan.refusal(name, knobs.name)
    if conflict:
        pytest.skip(f"{name}: {conflict}")
    options = knobs.backend_options(suite.options.collective_timeout,
                                    *tuning.autotune_inputs(suite, knobs, workload_name))
    workload = make_workload(workload_name)
    config = _train_config(knobs, suite.options, mode, workload)
    backend = open_backend(name, options)
    trainer = Trainer(workload, backend, config)
    watch = compile_stats.CompileWatch(knobs.compile)
    per_gpu = backend.devices_in_use()  # their peaks are reset after warm-up (_timed)
    # on a GPU DDP's statistics are read in untimed steps after the rounds (ddp_stats.py)
    stats = DDPStats(trainer.net, suite.options.ddp_sample_rate,
                     deferred=backend.device.type == "cuda")
    timed = _timed(benchmark, trainer, backend, suite, stats, watch)
    per_round = suite.options.steps_per_round
    losses = trainer.global_losses()  # the timed run's, before any untimed step
    window = stats.sample(trainer, per_round) if stats.deferred else timed.window
    stats.close()
    gathered = backend.all_gather_object({
        "times": timed.times, "series": timed.series, "cuda_mb": timed.cuda_mb,
        "rss": max(timed.series["rss_mb"], default=None),
        "ddp": stats.rank_summary(*window, backend.rank), "starts": timed.starts,
        "held": held_bytes(trainer.model, trainer.optimizer), "startup": startup.seconds(),
        "tx": timed.tx_bytes,
        "compile": watch.rank_summary(), "waits": timed.waits, "cpu": timed.cpu,
        "pace": timed.pace,
        "per_gpu": [torch.cuda.max_memory_allocated(i) / 2**20 for i in per_gpu] or None})
    loss_check = loss_bound.check(knobs, workload, backend, losses,  # maths-changing sets
                                  config.input_mode)
    traces = _profile(suite, trainer, backend, workload_name, knobs.name)
    rank_times = [g["times"] for g in gathered]
    per_step, round_times = _slowest(rank_times, per_round)
    _replace_stats(benchmark, round_times)
    if suite.timeline and "timeline" in backend.capabilities.instruments:
        benchmark.group = f"horovod timeline {workload_name} {knobs.name}"
        benchmark.extra_info.update(HorovodTimelineRecord(
            backend=name, world_size=backend.world_size, launcher=backend.env.launcher,
            backend_meta=backend.metadata(), workload=workload_name,
            workload_params=workload.hyperparameters(), knobs=knobs.as_dict(),
            knob_set=knobs.name, per_rank_batch=workload.batch_size,
            global_batch=trainer.global_batch, timeline=suite.timeline_ref,
            step_times=per_step.tolist(), rank_step_times=rank_times,
            rank_step_starts=[g["starts"] for g in gathered]).to_dict())
    else:
        compiled = compile_stats.merge([g["compile"] for g in gathered], knobs.compile,
                                       compiling.optimize_ddp(), compiling.cache_state()
                                       ) if watch.active else {}
        _record_throughput(benchmark, suite, backend, workload, knobs, trainer, gathered,
                           per_step, losses, stats, traces, compiled, loss_check)
    finite = all(np.isfinite(losses))
    assert finite, f"{name}: non-finite loss during throughput run: {losses}"
    if loss_check is not None:  # beyond the bound: a marked measurement; past the fault
        said = f"{name} with {knobs.name}: {loss_bound.describe(loss_check)}"  # line: fails
        assert not loss_check["fault"], said
        if not loss_check["within"]:
            warnings.warn(f"{said}; throughput kept, marked beyond its loss bound",
                          stacklevel=1)


def _profile(suite, trainer, backend, workload_name: str, knob_set: str) -> list[str] | None:
    """--profile-steps N: N more steps under torch.profiler after the timed rounds and the
    losses (hvd_vs_ddp/harness/profiling.py); every rank writes its trace. The traces'
    names, relative
    to the results file's folder, in rank order; None when off (or in a timeline cell)."""
    steps = suite.options.profile_steps
    if not steps or suite.timeline or suite.profile_at is None:
        return None
    folder, stem = suite.profile_at
    names = [profiling.trace_name(stem, workload_name, knob_set, r)
             for r in range(backend.world_size)]
    profiling.profile_steps(trainer, steps, folder / names[backend.rank],
                            profiling.cuda_in_use(backend.device), suite.options.run_dir)
    return names


def _record_throughput(benchmark, suite, backend, workload, knobs, trainer, gathered,
                       per_step, losses, stats: DDPStats, traces: list[str] | None,
                       compiled: dict | None = None, loss_check: dict | None = None) -> None:
    name, workload_name = backend.name, workload.name
    per_round = suite.options.steps_per_round
    rank_times = [g["times"] for g in gathered]
    sps = (trainer.global_batch / per_step).tolist()
    ddp = [g["ddp"] for g in gathered]
    benchmark.group = f"throughput {workload_name} {knobs.name}"
    benchmark.extra_info.update(ThroughputRecord(
        backend=name, world_size=backend.world_size,
        launcher=backend.env.launcher, backend_meta=backend.metadata(),
        workload=workload_name, workload_params=workload.hyperparameters(),
        knobs=knobs.as_dict(), knob_set=knobs.name,
        per_rank_batch=workload.batch_size, global_batch=trainer.global_batch,
        warmup_steps=suite.options.warmup_steps,
        steps_per_round=per_round, rounds=suite.options.rounds,
        step_times=per_step.tolist(), rank_step_times=rank_times,
        samples_per_s=sps, samples_per_s_median=float(np.median(sps)),
        samples_per_s_iqr=[float(np.percentile(sps, 25)), float(np.percentile(sps, 75))],
        losses=losses,
        memory={"max_rss_mb": [g["rss"] for g in gathered],
                "cuda_max_allocated_mb": [g["cuda_mb"] for g in gathered]
                if gathered[0]["cuda_mb"] is not None else None,
                **{key: [g["held"][key] for g in gathered] for key in gathered[0]["held"]},
                **({"cuda_per_device_mb": gathered[0]["per_gpu"]}
                   if gathered[0]["per_gpu"] else {})},
        monitor={"interval_s": 0.5, "ranks": [g["series"] for g in gathered]},
        startup_s=([g["startup"] for g in gathered]
                   if all(g["startup"] is not None for g in gathered) else None),
        ddp_stats=({"sample_rate": stats.sample_rate, **stats.layout(), "ranks": ddp,
                    "window": "after" if stats.deferred else "timed"}
                   if stats.active else None),
        profile_traces=traces, loss_check=loss_check, **(compiled or {}),
        **_wire_fields(trainer, gathered, len(per_step)),
        pace_probe=pace.record([g["pace"] for g in gathered]),
        **_input_fields(trainer, gathered),
    ).to_dict())


def _wire_fields(trainer, gathered, steps: int) -> dict:
    """The link this cell ran over (hvd_vs_ddp/links/; absent: loopback) and, across
    emulated hosts, what each rank's host sent on it per timed step, beside the model's
    gradient bytes and what a ring allreduce of them sends (docs/results-format.md)."""
    link = wire.link()
    if link is None:
        return {}
    grad = rates.gradient_bytes(trainer.model)
    n = len(gathered)
    sent = [g["tx"] for g in gathered]
    per_step = [t / steps if t is not None else None for t in sent]
    known = [b for b in per_step if b is not None]
    ring = rates.ring_allreduce_bytes(grad, n)
    mean = float(np.mean(known)) if known else None
    return {"link": link, "wire": {
        "iface": wire.iface(), "rate_bps": rates.bits_per_s(link), "timed_steps": steps,
        "grad_bytes": int(grad), "ring_bytes": ring,
        "ranks": [{"rank": r, "tx_bytes": t, "tx_bytes_per_step": b}
                  for r, (t, b) in enumerate(zip(sent, per_step))],
        "tx_bytes_per_step": mean,
        "wire_over_ring": (mean / ring) if mean is not None and ring else None}}


def _input_fields(trainer, gathered) -> dict:
    """The input pipeline's fields of the record (docs/results-format.md): its mode, what
    the mode meant here and its knobs, how steps were timed (wall clock or CUDA events)
    and cuDNN's autotuner, per timed step the longest wait for a batch on any rank, and
    the host CPU of each rank's process and of its loader workers (means over ranks;
    every rank's own, its threads by group, in `input_pipeline`)."""
    cpu = [g["cpu"] for g in gathered]
    waits = np.max(np.asarray([g["waits"] for g in gathered], dtype=float), axis=0)
    config = trainer.config
    return {"input_mode": config.input_mode, "loader_workers": trainer.batches.workers,
            "pin_memory": bool(trainer.pin_memory), "data_wait_s": waits.tolist(),
            "step_timer": trainer.step_timer, "cudnn_benchmark": config.cudnn_benchmark,
            "host_cpu_cores": float(np.mean([c["host_cpu_cores"] for c in cpu])),
            "loader_cpu_cores": float(np.mean([c["loader_cpu_cores"] for c in cpu])),
            "input_pipeline": {
                "cores": os.cpu_count(), "jpeg_set": trainer.input_set,
                "meaning": feed.meaning(config.input_mode, trainer.device.type == "cuda"),
                "ready_batches": (feed.READY_BATCHES if config.input_mode == feed.DEVICE
                                  else None),
                "ranks": [{"rank": r, **c, "data_wait_s": g["waits"]}
                          for r, (c, g) in enumerate(zip(cpu, gathered))]}}


def test_compute_only(benchmark, suite, plugin, make_workload, compute_cell):
    """The same per-rank step with no communication, on every rank at once."""
    workload_name, knobs, mode = compute_cell
    _skip_gpu_only(knobs)
    if knobs.communicates:
        pytest.skip(f"knob set {knobs.name} only changes communication")
    workload = make_workload(workload_name)
    config = _train_config(knobs, suite.options, mode, workload)
    from hvd_vs_ddp.backends.local import SingleBackend

    backend = SingleBackend(knobs.backend_options(), env=SINGLE).setup()
    if torch.cuda.is_available():  # one GPU per rank, placed as the distributed backends are
        backend.device = torch.device("cuda", placement.here(plugin.env, on_gpu=True).ordinal)
        torch.cuda.set_device(backend.device)  # else every rank's context lands on GPU 0
    trainer = Trainer(workload, backend, config)
    timed = _timed(benchmark, trainer, backend, suite)
    gathered = plugin.coord.gather({"times": timed.times, "pace": timed.pace},
                                   "compute-only times")
    rank_times = [g["times"] for g in gathered]
    per_step, round_times = _slowest(rank_times, suite.options.steps_per_round)
    _replace_stats(benchmark, round_times)
    benchmark.group = f"compute-only {workload_name} {knobs.name}"
    benchmark.extra_info.update(ComputeOnlyRecord(
        backend=SingleBackend.name, world_size=plugin.env.world_size,
        launcher=plugin.env.launcher, workload=workload_name,
        workload_params=workload.hyperparameters(), knobs=knobs.as_dict(),
        knob_set=knobs.name, per_rank_batch=workload.batch_size,
        concurrent_ranks=plugin.env.world_size,
        step_times=per_step.tolist(), rank_step_times=rank_times,
        step_time_median=float(np.median(per_step)), input_mode=mode,
        pace_probe=pace.record([g["pace"] for g in gathered]),
    ).to_dict())

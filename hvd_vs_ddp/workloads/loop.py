"""The ONE training loop that every backend runs.

`train(workload, backend, config)` seeds, builds the model and optimizer from the
workload, lets the backend wrap them (its broadcast makes every rank start from rank
0's weights: see `build`), and runs `config.steps` optimizer steps. On the CPU each
step is timed whole; on a GPU a round of steps runs back to back with the device
drained only at its ends, as training runs, and each step's time is read from CUDA
events recorded around it, after the round (Trainer.run). A step's batch comes from the
input mode's feed (hvd_vs_ddp/workloads/feed.py: ready batches on the device, a loader
with a side-stream copy, or JPEGs decoded by workers), and the harness's own code in the
step runs under the sync guard (hvd_vs_ddp/workloads/sync_guard.py): it may not make the
host wait for the device. It returns this rank's step times and the global mean loss of every
step (averaged across ranks once, after training, so timing is not disturbed by an
extra collective per step).

    from hvd_vs_ddp.backends import registry as B; from workloads import registry as W
    from hvd_vs_ddp.workloads.loop import TrainConfig, train
    with B.create("single") as be:
        print(train(W.get("mlp"), be, TrainConfig(steps=5)).losses)
"""
from __future__ import annotations

import contextlib
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from hvd_vs_ddp.backends.base import Backend, BackendUnavailable
from hvd_vs_ddp.backends.compile_support import MODES as COMPILE_MODES
from hvd_vs_ddp.common.input_modes import JPEG, check_input_mode
from hvd_vs_ddp.workloads import compiling, feed, jpeg_set, sync_guard
from hvd_vs_ddp.workloads.data import ShardedBatches
from hvd_vs_ddp.workloads.spec import Workload

PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class TrainConfig:
    """Knobs of the loop (the communication knobs live in BackendOptions).

    steps: optimizer steps to run (each with accumulation_steps micro-batches).
    precision: fp32; bf16 autocast (CPU or GPU); fp16 autocast + GradScaler (GPU).
    num_workers: DataLoader worker processes per rank.
    set_to_none: optimizer.zero_grad(set_to_none=...).
    checkpointing: activation checkpointing in the model's blocks.
    channels_last: NHWC memory format for image models on GPUs.
    deterministic: torch.use_deterministic_algorithms for bitwise repeatability.
    host_sync: loss.item() after every step (the habit of logging each step's loss:
        the host waits for the device).
    empty_cache: torch.cuda.empty_cache() after every step (GPU only; a no-op on CPU).
    compile: "eager", "inductor" or "compiled-autograd" (hvd_vs_ddp/workloads/compiling.py;
        a backend that cannot honour it is refused before anything is built).
    input_mode: "memory" (the workload's tensors through a DataLoader), "jpeg" (JPEG files
        decoded and augmented on the host: hvd_vs_ddp/workloads/jpeg_set.py) or "device"
        (a few ready batches on the device, rotated): hvd_vs_ddp/workloads/feed.py.
    pin_memory: the DataLoader's pin_memory; None: on where the device is a GPU.
    cudnn_benchmark: cuDNN's autotuner (torch.backends.cudnn.benchmark): on in the
        throughput cells, as Horovod's own benchmark sets it; off where losses are
        compared step by step (its choice of algorithm may differ between processes).
    jpeg_size: the side of the synthetic JPEGs (input_mode "jpeg"); 0: jpeg_set's default.
    """

    steps: int = 10
    precision: str = "fp32"
    num_workers: int = 0
    set_to_none: bool = True
    checkpointing: bool = False
    channels_last: bool = False
    deterministic: bool = False
    host_sync: bool = False
    empty_cache: bool = False
    compile: str = "eager"
    input_mode: str = "memory"
    pin_memory: bool | None = None
    jpeg_size: int = 0
    cudnn_benchmark: bool = False

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {self.num_workers}")
        if self.compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {COMPILE_MODES}, got {self.compile!r}")
        check_input_mode(self.input_mode)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrainResult:
    losses: list[float]          # global mean loss per optimizer step
    step_times: list[float]      # this rank's seconds per optimizer step
    per_rank_batch: int
    global_batch: int            # samples per optimizer step, all ranks
    world_size: int
    model: torch.nn.Module = field(repr=False)

    def samples_per_s(self, skip: int = 0) -> float:
        times = self.step_times[skip:]
        return self.global_batch / float(np.median(times))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _autocast(device: torch.device, precision: str):
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def init_seed(seed: int, rank: int) -> int:
    """The seed a rank builds its model from: rank 0 (and `single`) the workload's own,
    every other rank another one, so that ranks start from different random weights and
    only the backend's broadcast makes them equal: a backend that forgets to broadcast
    trains from mixed weights and fails the suites' convergence and weight checks
    (tests/plugins/mutations.py proves it)."""
    return seed + 7919 * rank


def build(workload: Workload, backend: Backend, config: TrainConfig):
    """Model and optimizer, wrapped by the backend (Dynamo configured first for a compile
    mode: DDP reads its mode when it is built). Every rank builds from its own seed
    (init_seed): equal weights on all ranks are the backend's broadcast, not the seed's.
    Everything after the model (data order, dropout) is seeded alike on every rank."""
    if config.precision == "fp16" and backend.device.type != "cuda":
        raise ValueError("precision fp16 needs a CUDA device (GradScaler); use bf16 on CPU")
    if not backend.judged:  # a cell's plan judged its compile modes already (cell_plan)
        refused = type(backend).judge(options=backend.options, compile=config.compile,
                                      cuda=backend.device.type == "cuda")
        if not refused:
            raise BackendUnavailable(f"{backend.name}: {refused.reason}")
    compiling.configure(config.compile)
    seed_everything(init_seed(workload.seed, backend.rank))
    model = workload.build_model(config.checkpointing)
    seed_everything(workload.seed)
    if config.channels_last and workload.supports_channels_last:
        model = model.to(memory_format=torch.channels_last)
    model = model.to(backend.device)
    optimizer = workload.make_optimizer(model.parameters())
    return backend.prepare(model, optimizer)


class Trainer:
    """A model, optimizer and data stream ready to step; `run(n)` steps n times.

    The suites use it to warm up and then time rounds of steps on one model;
    `train()` below is the whole run in one call.
    """

    def __init__(self, workload: Workload, backend: Backend, config: TrainConfig,
                 on_grads: Callable[[int, torch.nn.Module], None] | None = None,
                 emulate_ranks: int = 1) -> None:
        """`emulate_ranks` W > 1 (one process only): each micro-batch of W x B samples is
        cut into the W per-rank shards that W real ranks would see, and their losses,
        each divided by W, are back-propagated one shard at a time. The gradient is then
        the average of W per-rank gradients, as allreduce makes it, and models with
        BatchNorm normalise over B samples like each real rank: the exact single-process
        reference of synchronous data parallelism."""
        if emulate_ranks < 1 or (emulate_ranks > 1 and backend.world_size != 1):
            raise ValueError(f"emulate_ranks={emulate_ranks} needs one process, "
                             f"got world size {backend.world_size}")
        if workload.batch_size % emulate_ranks:
            raise ValueError(f"emulate_ranks={emulate_ranks} does not divide the batch "
                             f"of {workload.batch_size}")
        self.emulate_ranks = emulate_ranks
        if config.deterministic:
            torch.use_deterministic_algorithms(True)
        self.workload, self.backend, self.config = workload, backend, config
        self.on_grads = on_grads
        self.device = backend.device
        self.model, self.optimizer = build(workload, backend, config)
        self.model.train()
        # what the forward pass calls: the model, or the model compiled (config.compile)
        self.net = compiling.apply(backend, self.model, config.compile)
        dataset: torch.utils.data.Dataset
        if config.input_mode == JPEG:
            files = jpeg_set.dataset_for(workload, config.jpeg_size)
            self.input_set: dict | None = jpeg_set.describe(files)  # what was read
            dataset = files
        else:
            dataset, self.input_set = workload.build_dataset(workload.seed), None
        ready = config.input_mode == feed.DEVICE  # batches placed once: no loader work
        self.pin_memory = (self.device.type == "cuda" and not ready
                           if config.pin_memory is None else config.pin_memory)
        self._batches = ShardedBatches(
            dataset, workload.batch_size, backend.rank, backend.world_size, workload.seed,
            0 if ready else config.num_workers, pin_memory=self.pin_memory)
        self.accum = backend.options.accumulation_steps
        self.scaler = torch.amp.GradScaler("cuda") if config.precision == "fp16" else None
        self.channels_last = config.channels_last and workload.supports_channels_last
        torch.backends.cudnn.benchmark = config.cudnn_benchmark
        self.feed = feed.make(config.input_mode, self._batches, self.device,
                              self.channels_last, self.pin_memory)
        # the harness's code in a timed step may not wait for the device (sync_guard)
        self.guarded = True
        self.local_losses: list[torch.Tensor] = []
        self.step_times: list[float] = []
        # per step, the seconds it waited for its batches (next() on the loader)
        self.data_waits: list[float] = []
        # whether run() lets the CPU run ahead of the device between its steps; there
        # each step is timed by CUDA events read after its round ("events"), else by
        # the wall clock around it ("wall")
        self.pipelined = self.device.type == "cuda"
        self.step_timer = "events" if self.pipelined else "wall"

    @property
    def batches(self) -> ShardedBatches:
        """This rank's stream of batches, under the input mode's feed."""
        return self._batches

    @batches.setter
    def batches(self, stream) -> None:
        """Another stream (the recovery trials position theirs at a step): the feed is
        made anew over it, in the same input mode."""
        self._batches = stream
        self.feed = feed.make(self.config.input_mode, stream, self.device,
                              self.channels_last, self.pin_memory)

    @property
    def global_batch(self) -> int:
        return self.workload.batch_size * self.accum * self.backend.world_size

    def step(self) -> float:
        """One optimizer step (accum micro-batches), the device drained before and after;
        returns its wall time in seconds."""
        return self._round(1)

    def _round(self, steps: int) -> float:
        """`steps` steps back to back, the device drained before the first and after the
        last; returns the round's mean seconds per step. Each step's own time is recorded:
        on a GPU from CUDA events recorded on the step's stream before each step and after
        the last, read once the round is drained (no wait inside the round; a step's time
        runs from the device reaching its start to reaching the next one, so it includes
        any time the device waited for the host); elsewhere the round's wall time per step
        where the round is one step (the CPU: every step is a round)."""
        events = ([torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
                  if self.step_timer == "events" else None)
        self.backend.synchronize()
        start = time.perf_counter()
        for i in range(steps):
            if events is not None:
                with sync_guard.harness(self.device, self.guarded):
                    events[i].record()
            self._work()
        if events is not None:
            with sync_guard.harness(self.device, self.guarded):
                events[steps].record()
        self.backend.synchronize()
        wall = time.perf_counter() - start
        if events is None:
            self.step_times.extend([wall / steps] * steps)
        else:  # the round is drained: reading the events waits for nothing
            self.step_times.extend(events[i].elapsed_time(events[i + 1]) / 1e3
                                   for i in range(steps))
        return wall / steps

    def loader_pids(self) -> list[int]:
        """The process ids of this rank's DataLoader workers (persistent once started;
        empty with num_workers 0, or before the first batch)."""
        return self.batches.worker_pids()

    def _work(self) -> None:
        """One optimizer step's work as the CPU issues it; on a GPU it may still be
        running when this returns."""
        backend, device, model = self.backend, self.device, self.model
        guarded = self.guarded
        backend.zero_grad(self.optimizer, self.config.set_to_none)
        total: torch.Tensor | None = None
        waited = 0.0
        for micro in range(self.accum):
            t0 = time.perf_counter()
            with sync_guard.harness(device, guarded):  # ours: the batch, placed
                x, y = next(self.feed)
            waited += time.perf_counter() - t0
            with backend.accumulate(model, last=micro == self.accum - 1), \
                    compiling.step_context(self.config.compile):
                loss = self._forward_backward(x, y)  # the model's and the library's
            with sync_guard.harness(device, guarded):  # ours: the loss, kept on the device
                total = loss if total is None else total + loss
        assert total is not None  # accumulation_steps >= 1
        index = len(self.local_losses)  # this step's: its loss is recorded below
        on_grads = self.on_grads
        hook = (lambda: on_grads(index, model)) if on_grads is not None else None
        backend.step(self.optimizer, self.scaler, before_step=hook)
        if self.config.host_sync:
            total.item()  # the field's per-step loss logging: waits for the device
        if self.config.empty_cache and device.type == "cuda":
            torch.cuda.empty_cache()
        self.local_losses.append(total)
        self.data_waits.append(waited)

    def _forward_backward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Loss of one micro-batch (already divided for accumulation), back-propagated."""
        parts = self.emulate_ranks
        shards = [(x, y)] if parts == 1 else [(x[r::parts], y[r::parts]) for r in range(parts)]
        total: torch.Tensor | None = None  # no extra tensor op in the step when parts == 1
        share = self.accum * parts  # no division kernel when it is 1 (x / 1 == x exactly)
        for xs, ys in shards:
            with _autocast(self.device, self.config.precision):
                loss = self.workload.loss(self.net(xs), ys)
                loss = loss / share if share != 1 else loss
            (self.scaler.scale(loss) if self.scaler is not None else loss).backward()
            part = loss.detach().double()
            total = part if total is None else total + part
        assert total is not None  # at least one shard
        return total

    def run(self, steps: int) -> list[float]:
        """`steps` optimizer steps back to back; returns their times in seconds.

        Where the device runs behind the CPU (`pipelined`: a GPU), it is drained only
        before the first step and after the last, as training runs: the CPU keeps the
        lead it builds (the next batch, forward's launches, DDP's optimizer launches
        behind its buckets) and a library that takes it away (Horovod's synchronize()
        waiting for the GPU) pays for that in the figure. Each step's time is then read
        from its CUDA events after the round. Timed with the device drained around every
        step, the suite gave 0.74 of a minimal ResNet-50 loop's throughput on one H100
        (docs/gpu.md). On the CPU nothing runs ahead, and each step is timed alone."""
        first = len(self.step_times)
        if steps < 2 or not self.pipelined:
            for _ in range(steps):
                self.step()
        else:
            self._round(steps)
        return self.step_times[first:]

    def global_losses(self) -> list[float]:
        """Mean loss over all ranks for every step so far (one collective)."""
        if not self.local_losses:
            return []
        local = torch.stack(self.local_losses)
        return (self.backend.all_reduce(local, op="sum") / self.backend.world_size).cpu().tolist()

    def result(self) -> TrainResult:
        return TrainResult(losses=self.global_losses(), step_times=list(self.step_times),
                           per_rank_batch=self.workload.batch_size,
                           global_batch=self.global_batch,
                           world_size=self.backend.world_size, model=self.model)


def train(workload: Workload, backend: Backend, config: TrainConfig,
          on_grads: Callable[[int, torch.nn.Module], None] | None = None) -> TrainResult:
    """Run `config.steps` steps; `on_grads(step, model)` sees the final gradients."""
    trainer = Trainer(workload, backend, config, on_grads)
    trainer.run(config.steps)
    return trainer.result()


@torch.no_grad()
def accuracy(model: torch.nn.Module, dataset, device: torch.device,
             batch_size: int = 512) -> float:
    """Top-1 accuracy of `model` on a (small, held-out) data set."""
    was_training = model.training
    model.eval()
    correct = total = 0
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size)
    for x, y in loader:
        pred = model(x.to(device)).argmax(dim=-1)
        correct += int((pred == y.to(device)).sum())
        total += y.numel()
    model.train(was_training)
    return correct / max(total, 1)

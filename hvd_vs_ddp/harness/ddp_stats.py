"""DDP's own account of a step: torch's runtime statistics, per rank and per step.

torch's DistributedDataParallel times sampled iterations itself (its C++ Logger):
forward compute, backward compute, backward communication (first bucket's allreduce
start to the last one's end) and the overlap of the two (communication start to the
end of backward compute), in nanoseconds, plus its bucket layout. It writes the
values of iteration k during the forward pass of iteration k + 1, so a forward hook
on the DDP module reads them one step late; every timed step but the last gets its
values, picked by DDP's own iteration number (one per forward pass). The absolute
timestamps are wall clock (ns since the epoch), so ranks on one host are directly
comparable: the last rank to finish backward compute is the straggler the others
wait for.

    stats = DDPStats(model, sample_rate=1)   # at wrap time; inactive if not DDP
    start = stats.mark(); ...timed steps...; end = stats.mark()   # forward passes so far
    row = stats.rank_summary(start, end, rank)   # -> gathered to rank 0 by the suite
    stats.close()

Compiled (hvd_vs_ddp/workloads/compiling.py): give it what the forward pass calls (the
Trainer's `net`): the hook goes on that outer module, so it runs outside the compiled
code (a hook on the DDP module itself would be traced and break the graph), and the
statistics are read from the DDP module inside. Under compiled autograd DDP's python
reducer replaces the C++ one, which then records nothing (no steps are read).

Off (`sample_rate=0`): DDP still samples its first 10 iterations and then every
100th (its default); nothing is read.

Deferred (`deferred=True`, the throughput suite on a GPU): DDP times a sampled
iteration with CUDA events and reads them at the next forward pass by synchronizing on
them, and the forward hook reads its statistics on the training thread: at sample rate 1
that makes the host wait for the device every step, a cost of the harness's asking
charged to DDP's figure (on one H200 at batch 8: 354 against 377 samples/s). Deferred,
nothing is changed during the timed rounds (DDP's own default sampling, which every user
has, stays); `sample(trainer, steps)` then turns sampling on for that many untimed steps
after them and returns their window.
"""
from __future__ import annotations

from typing import Any

import torch

# DDP's per-iteration keys (ns) -> our names (seconds)
PER_STEP = {
    "forward_compute_time": "forward_compute_s",
    "backward_compute_time": "backward_compute_s",
    "backward_comm_time": "backward_comm_s",
    "backward_compute_comm_overlap_time": "overlap_s",
}
STAMPS = {"backward_compute_time_end": "backward_compute_end_ns",
          "backward_comm_time_end": "backward_comm_end_ns"}


def _ints(text: Any) -> list[int]:
    """DDP writes lists as '1, 2, 3' strings."""
    if isinstance(text, (list, tuple)):
        return [int(x) for x in text]
    return [int(x) for x in str(text or "").replace(",", " ").split()]


def is_ddp(model: torch.nn.Module) -> bool:
    return isinstance(model, torch.nn.parallel.DistributedDataParallel)


class DDPStats:
    """Reads DDP's runtime statistics after every sampled forward pass."""

    def __init__(self, model: Any, sample_rate: int = 1, deferred: bool = False) -> None:
        self.outer = model  # torch.compile's wrapper, if compiled: hooks on it run eagerly
        model = getattr(model, "_orig_mod", model)
        self.model, self.sample_rate = model, sample_rate  # Any: DDP's private methods
        self.steps: list[dict[str, int]] = []
        self.forwards = 0  # DDP's own iteration count: one per forward pass
        self._handle = None
        self.active = is_ddp(model) and sample_rate > 0
        self.deferred = deferred and self.active
        if self.active and not self.deferred:
            self._start()

    def _start(self) -> None:
        self.model._set_ddp_runtime_logging_sample_rate(self.sample_rate)
        self._handle = self.outer.register_forward_hook(self._on_forward)

    def sample(self, trainer: Any, steps: int) -> tuple[int, int]:
        """Deferred: sampling on for `steps` untimed steps of `trainer` (one more, whose
        forward pass reads the last one's values); their window (start, end) marks."""
        if not self.deferred:
            raise RuntimeError("DDPStats.sample() is for deferred statistics only")
        if self._handle is None:
            self._start()
        # DDP's forward passes so far: one per micro-batch of every step the trainer ran
        self.forwards = len(trainer.local_losses) * trainer.accum
        start = self.mark()
        trainer.run(steps)
        end = self.mark()
        trainer.run(1)
        return start, end

    def _on_forward(self, module, inputs, output) -> None:
        self.forwards += 1
        data = self.model._get_ddp_logging_data()
        it = int(data.get("iteration", 0))
        if it <= 0 or (self.steps and self.steps[-1]["iteration"] == it):
            return  # nothing sampled yet, or this iteration is already read
        if not data.get("backward_comm_time_end"):
            return
        self.steps.append({"iteration": it, **{k: int(data.get(k, 0))
                                              for k in (*PER_STEP, *STAMPS)}})

    def mark(self) -> int:
        """Forward passes so far: the iteration numbers after it are the next steps'."""
        return self.forwards

    def layout(self) -> dict[str, Any]:
        data = self.model._get_ddp_logging_data() if is_ddp(self.model) else {}
        sizes = _ints(data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes"))
        return {"bucket_cap_bytes": int(data.get("bucket_cap_bytes", 0)),
                "bucket_sizes": sizes,
                "num_buckets_reduced": int(data.get("num_buckets_reduced", len(sizes))),
                "gradient_as_bucket_view": bool(data.get("gradient_as_bucket_view", 0)),
                "total_parameter_size_bytes": int(data.get("total_parameter_size_bytes", 0)),
                "num_parameter_tensors": int(data.get("num_parameter_tensors", 0))}

    def rank_summary(self, start: int, end: int, rank: int) -> dict[str, Any] | None:
        """Values of the iterations between two marks (the timed steps); the last one's
        are not read yet (they would be at the next forward pass)."""
        if not self.active:
            return None
        rows = [r for r in self.steps if start < r["iteration"] <= end]
        out: dict[str, Any] = {"rank": rank, "iterations": [r["iteration"] for r in rows]}
        for key, name in PER_STEP.items():
            out[name] = [r[key] / 1e9 for r in rows]
        for key, name in STAMPS.items():
            out[name] = [r[key] for r in rows]
        return out

    def close(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

"""Horovod: DistributedOptimizer, broadcast from rank 0, compression, accumulation.

hvd.init() picks the controller the launcher set up (horovodrun --gloo: Gloo;
horovodrun --mpi or plain mpirun: MPI). Gradient accumulation is Horovod's own
backward_passes_per_step; fp16 compression is hvd.Compression.fp16; bucket_mb,
cycle_time_ms, hierarchical and autotune_log set HOROVOD_FUSION_THRESHOLD,
HOROVOD_CYCLE_TIME, HOROVOD_HIERARCHICAL_ALLREDUCE and HOROVOD_AUTOTUNE(_LOG) before
init; adasum reduces with hvd.Adasum (a different sum, not an average). The AMP pattern is Horovod's
documented one: synchronize(), unscale, then step inside skip_synchronize().
Every fact the result depends on (controller, tensor operations, fusion
threshold, cycle time) goes into metadata().

    horovodrun -np 2 --gloo python -m pytest suites/ -k horovod
    horovodrun -np 2 --mpi  python -m pytest suites/ -k horovod
"""
from __future__ import annotations

import atexit
import math
import os
import pickle
from importlib import metadata as importlib_metadata
from typing import Any, Callable

import torch

from hvd_vs_ddp.backends import placement
from hvd_vs_ddp.backends.base import Availability, Backend, BackendUnavailable, check_op
from hvd_vs_ddp.backends.horovod_layout import ChannelsLastSafe, dense_view
from hvd_vs_ddp.backends.horovod_wait import oversubscribed, settle

DEFAULT_FUSION_BYTES = 128 * 1024 * 1024
GLOO_TIMEOUT_ENV = "HOROVOD_GLOO_TIMEOUT_SECONDS"
DEFAULT_CYCLE_MS = 1.0


# Autotune settles in (warm-up + ~max samples + 8 categorical) tries of 5 samples of
# steps-per-sample steps each; Horovod's defaults (3, 10, 20) need thousands of steps,
# too many for a benchmark budget. Horovod reads these when its library loads, so the
# suites set them before that (hvd_vs_ddp/harness/tuning.py set_budget); here they are recorded.
AUTOTUNE_BUDGET = {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
                   "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2",
                   "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "6"}

_STATE: dict[str, dict[str, str]] = {}


def _requested_fusion(options) -> int:
    if options.bucket_mb is not None:
        return int(options.bucket_mb * 2**20)
    return int(os.environ.get("HOROVOD_FUSION_THRESHOLD", DEFAULT_FUSION_BYTES))


def init_env(options) -> dict[str, str]:
    """The HOROVOD_* variables Horovod reads once, at init, for these options."""
    env: dict[str, str] = {}
    # Autotune tunes the fusion threshold only where it is not given (a given one is fixed).
    if not (options.autotune_log is not None and options.bucket_mb is None
            and "HOROVOD_FUSION_THRESHOLD" not in os.environ):
        env["HOROVOD_FUSION_THRESHOLD"] = str(_requested_fusion(options))
    if options.cycle_time_ms is not None:
        env["HOROVOD_CYCLE_TIME"] = f"{options.cycle_time_ms:g}"
    if options.hierarchical:
        env["HOROVOD_HIERARCHICAL_ALLREDUCE"] = "1"
    if options.autotune_log is not None:
        env["HOROVOD_AUTOTUNE"] = "1"
        env["HOROVOD_AUTOTUNE_LOG"] = options.autotune_log
        for var, value in AUTOTUNE_BUDGET.items():  # the user's own values win
            env[var] = os.environ.get(var, value)
    return env


def fusion_conflict(options) -> str | None:
    """Horovod reads its fusion threshold, cycle time, hierarchical allreduce and
    autotune once, at init: different ones need a new job."""
    if "init" not in _STATE or init_env(options) == _STATE["init"]:
        return None
    have, want = _STATE["init"], init_env(options)
    diff = ", ".join(f"{k}={have.get(k, 'unset')} in this job, {want.get(k, 'unset')} "
                     "requested" for k in sorted(set(have) | set(want))
                     if have.get(k) != want.get(k))
    return (f"Horovod's settings are fixed when it starts ({diff}); run this knob set in "
            "its own job (e.g. --knob-set NAME)")


def _pickled(obj: Any) -> torch.Tensor:
    data = bytearray(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    return torch.frombuffer(data, dtype=torch.uint8)


def _unpickled(payload: torch.Tensor) -> Any:
    return pickle.loads(payload.numpy().tobytes())


def _shutdown() -> None:
    try:
        _hvd().shutdown()
    except Exception:  # interpreter teardown: nothing left to report to
        pass


def _hvd():
    import horovod.torch as hvd

    return hvd


def build_info() -> dict[str, Any]:
    """What the installed Horovod was built with, without launching anything."""
    hvd = _hvd()
    return {
        "version": importlib_metadata.version("horovod"),
        "controllers": [c for c, ok in (("gloo", hvd.gloo_built()), ("mpi", hvd.mpi_built()))
                        if ok],
        "tensor_ops": [o for o, ok in (("nccl", hvd.nccl_built()), ("gloo", hvd.gloo_built()),
                                       ("mpi", hvd.mpi_built())) if ok],
    }


class HorovodBackend(Backend):
    name = "horovod"

    @classmethod
    def availability(cls) -> Availability:
        try:
            info = build_info()
        except ImportError as exc:
            return Availability(False, f"Horovod is not installed ({exc}); "
                                       "run scripts/build_horovod.sh")
        except Exception as exc:  # a broken build raises from its extension
            return Availability(False, f"Horovod does not load: {exc}")
        if not info["controllers"]:
            return Availability(False, "Horovod was built without a controller "
                                       "(neither Gloo nor MPI)")
        if torch.cuda.is_available() and "nccl" not in info["tensor_ops"]:
            return Availability(False, "a GPU is visible but Horovod was built without NCCL "
                                       "ops; rebuild with HOROVOD_GPU_OPERATIONS=NCCL")
        return Availability(True, f"controllers {'+'.join(info['controllers'])}")

    @classmethod
    def launch_fit(cls, env) -> Availability:
        fit = super().launch_fit(env)  # the launcher table: can it start horovod at all?
        if not fit or env.world_size == 1:
            return fit
        if torch.cuda.is_available():  # NCCL underneath: one GPU per rank, as ddp-nccl
            why = placement.refusal(env, placement.visible_devices(
                os.environ, torch.cuda.device_count()), os.environ, nccl=True)
            if why:
                return Availability(False, why)
        try:
            controllers = build_info()["controllers"]
        except Exception:  # not installed: availability() says so
            return fit
        # a rank sees Gloo's rendezvous; a cell's plan, judged before its ranks start,
        # knows the launcher by name (hvd_vs_ddp/harness/cell_plan.py)
        if env.launcher == "horovodrun-gloo" or "HOROVOD_GLOO_RENDEZVOUS_ADDR" in os.environ:
            if "gloo" not in controllers:
                return Availability(False, "horovodrun --gloo but this Horovod has no Gloo "
                                           "controller")
        elif "mpi" not in controllers:
            return Availability(False, f"started by {env.launcher} without Gloo rendezvous, "
                                       "and this Horovod has no MPI controller")
        return fit

    @classmethod
    def option_conflict(cls, options, launch=None) -> str | None:
        """The catalog's line, else Adasum over Gloo (the launcher's controller), else
        settings other than those Horovod started with (read once, at its init)."""
        declared = super().option_conflict(options, launch)
        if declared:
            return declared
        gloo = (launch is not None and launch.launcher == "horovodrun-gloo") \
            or "HOROVOD_GLOO_RENDEZVOUS_ADDR" in os.environ
        if options.adasum and gloo:
            # measured here: every Adasum allreduce under horovodrun --gloo raised it
            return ("Horovod implements Adasum for MPI and NCCL only (over Gloo: 'No Adasum "
                    "operation enabled'); run it under horovodrun --mpi or mpirun")
        return fusion_conflict(options)

    def _setup(self) -> None:
        hvd = _hvd()
        if not hvd.is_initialized():
            want = init_env(self.options)
            os.environ.update(want)
            # Gloo's own per-operation timeout (Horovod's default, 30 s) lost a peer
            # ("Connection closed by peer") when an allreduce of 4 ranks on 2 busy cores
            # took 80 s: the backend's collective timeout bounds Gloo's operations too,
            # unless the user (or horovodrun --gloo-timeout-seconds) set one.
            os.environ.setdefault(GLOO_TIMEOUT_ENV, str(math.ceil(self.options.timeout_s)))
            hvd.init()
            atexit.register(_shutdown)
            _STATE["init"] = want
        else:  # a fact of this process, not of the cell: Horovod keeps its first settings
            fixed = fusion_conflict(self.options)
            if fixed:
                raise BackendUnavailable(f"{self.name}: {fixed}")
        self._fusion_bytes = int(_STATE["init"].get("HOROVOD_FUSION_THRESHOLD", 0)) or None
        # more ranks than cores on this host: wait for Horovod by sleeping (settle())
        self._polite = oversubscribed(hvd.local_size())
        self._ops = 0  # object collectives and barriers so far (_op_name)
        if hvd.size() != self.world_size or hvd.rank() != self.rank:
            raise BackendUnavailable(
                f"horovod: hvd.init() gave rank {hvd.rank()}/{hvd.size()} but the launcher "
                f"says {self.rank}/{self.world_size}")
        if self.device.type == "cuda":
            # the device backends/placement.py chose from the launcher's local rank
            # (Horovod's own must agree: its NCCL communicator is built per local rank)
            if hvd.local_rank() != self.env.local_rank:
                raise BackendUnavailable(
                    f"horovod: hvd.local_rank() is {hvd.local_rank()} but the launcher "
                    f"says local rank {self.env.local_rank}")
            torch.cuda.set_device(self.device)
        if self.world_size > 1 and self.placement is not None:
            everyone = [placement.Placement.from_json(p) for p in
                        hvd.allgather_object(self.placement.as_json(), name="placement")]
            why = placement.conflicts(everyone)
            if why:
                raise BackendUnavailable(f"horovod: {why}")

    def _close(self) -> None:
        # Horovod stays initialised until the process ends: a second hvd.init() after
        # shutdown() in a horovodrun job can read the first round's stale rendezvous
        # entries and abort. Nothing of a backend's state outlives its training run.
        self.barrier()

    # prepare() in three steps, each one method: tests/plugins/mutations.py replaces one
    # at a time (no broadcast, a sum for the average, no reduction) to prove the suites
    # fail without it.
    def prepare(self, model, optimizer):
        model = model.to(self.device)
        self._broadcast_initial(model, optimizer)
        return model, self._distributed_optimizer(model, optimizer)

    def _broadcast_initial(self, model, optimizer) -> None:
        """Rank 0's weights, buffers and optimizer state on every rank (ranks build their
        models from different seeds: workloads/loop.py init_seed)."""
        hvd = _hvd()
        # Horovod refuses non-contiguous tensors; channels_last weights are NHWC views.
        # hvd.broadcast_parameters's own calls (sorted by name, all in flight, then each
        # waited for), waited for by _wait() so that they sleep where ranks outnumber cores
        handles = [hvd.broadcast_async_(dense_view(t), root_rank=0, name=k)
                   for k, t in sorted(model.state_dict().items())]
        for h in handles:
            self._wait(h)
        # its object broadcasts spin where ranks outnumber cores: once per model
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    def _reduce_op(self):
        hvd = _hvd()
        return hvd.Adasum if self.options.adasum else hvd.Average

    def _distributed_optimizer(self, model, optimizer):
        hvd = _hvd()
        compression = hvd.Compression.fp16 if self.options.compression == "fp16" \
            else hvd.Compression.none
        return hvd.DistributedOptimizer(
            optimizer, named_parameters=model.named_parameters(),
            compression=ChannelsLastSafe(compression),
            backward_passes_per_step=self.options.accumulation_steps,
            op=self._reduce_op())

    def zero_grad(self, optimizer, set_to_none: bool = True) -> None:
        # Horovod's zero_grad() takes no set_to_none; keep its safety check, then
        # clear the gradients exactly as torch would.
        if getattr(optimizer, "_handles", None):
            raise RuntimeError("horovod: zero_grad() called after backward() but before "
                               "step() or synchronize()")
        torch.optim.Optimizer.zero_grad(optimizer, set_to_none=set_to_none)

    def step(self, optimizer, scaler=None, before_step: Callable[[], None] | None = None):
        if self.options.adasum:
            # Horovod's Adasum optimizer combines the ranks' optimizer updates inside its
            # own step() and refuses skip_synchronize() ("not supported when using Adasum"):
            # the hvd-adasum knob set failed every step. before_step sees this rank's own
            # gradients here, as nothing else is reduced.
            if scaler is not None:
                scaler.unscale_(optimizer)
            if before_step is not None:
                before_step()
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            return
        # gradients averaged across ranks from here on; the training thread's wait for
        # Horovod's background thread, named for torch.profiler (hvd_vs_ddp/harness/profiling.py)
        with torch.profiler.record_function("horovod:synchronize"):
            if self._polite:
                settle(h for h, _ in optimizer._handles.values())
            optimizer.synchronize()
        if scaler is not None:
            scaler.unscale_(optimizer)
        if before_step is not None:
            before_step()
        with optimizer.skip_synchronize():
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        hvd = _hvd()
        ops = {"sum": hvd.Sum, "avg": hvd.Average, "min": hvd.Min, "max": hvd.Max,
               "product": hvd.Product}
        return self._wait(hvd.allreduce_async_(tensor, op=ops[check_op(op)]))

    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        return self._wait(_hvd().broadcast_async_(tensor, root_rank=src))

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return self._wait(_hvd().allgather_async(tensor))

    def _wait(self, handle):
        """hvd.allreduce_() and its kin are their async call and synchronize(handle)."""
        if self._polite:
            settle([handle])
        return _hvd().synchronize(handle)

    # Horovod's own object collectives and barrier block in its spinning wait; where the
    # ranks outnumber the cores they run on the async calls and settle() instead: the
    # object pickled into a byte tensor (with its size first), as Horovod's own do.
    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        if not self._polite:
            return _hvd().broadcast_object(obj, root_rank=src)
        hvd, name = _hvd(), self._op_name("broadcast_object")
        payload = _pickled(obj) if self.rank == src else torch.empty(0, dtype=torch.uint8)
        size = torch.tensor([payload.numel()], dtype=torch.int64)
        self._wait(hvd.broadcast_async_(size, root_rank=src, name=f"{name}.size"))
        if self.rank != src:
            payload = torch.empty(int(size.item()), dtype=torch.uint8)
        self._wait(hvd.broadcast_async_(payload, root_rank=src, name=f"{name}.data"))
        return _unpickled(payload)

    def all_gather_object(self, obj: Any) -> list[Any]:
        if not self._polite:
            return _hvd().allgather_object(obj)
        hvd, name = _hvd(), self._op_name("allgather_object")
        payload = _pickled(obj)
        sizes = self._wait(hvd.allgather_async(
            torch.tensor([payload.numel()], dtype=torch.int64), name=f"{name}.size"))
        flat = self._wait(hvd.allgather_async(payload, name=f"{name}.data"))
        return [_unpickled(part) for part in torch.split(flat, sizes.tolist())]

    def barrier(self) -> None:
        if not self._polite:
            _hvd().barrier()
            return
        # an allreduce completes on no rank before every rank has joined it
        self._wait(_hvd().allreduce_async_(torch.zeros(1), name=self._op_name("barrier")))

    def _op_name(self, what: str) -> str:
        """A name every rank gives the same call (Horovod matches ops by name)."""
        self._ops += 1
        return f"hvd_vs_ddp.{what}.{self._ops}"

    def metadata(self) -> dict[str, Any]:
        meta = super().metadata()
        hvd = _hvd()
        controller = "mpi" if hvd.mpi_enabled() else "gloo" if hvd.gloo_enabled() else "?"
        cuda = self.device.type == "cuda"
        meta.update(build_info())
        meta.update({
            "controller": controller,
            "tensor_ops": "nccl" if cuda and hvd.nccl_built() else controller,
            "fusion_threshold_bytes": self._fusion_bytes,
            "cycle_time_ms": float(os.environ.get("HOROVOD_CYCLE_TIME", DEFAULT_CYCLE_MS)),
            "reduce_op": "adasum" if self.options.adasum else "average",
            "hierarchical_allreduce": self.options.hierarchical,
            "autotune": self.options.autotune_log is not None,
            # how the training thread waits for Horovod: its own spin, or settle()'s sleeps
            "wait": "poll-sleep (ranks outnumber cores)" if self._polite else "horovod",
            "gloo_timeout_s": (float(os.environ[GLOO_TIMEOUT_ENV])
                               if controller == "gloo" and GLOO_TIMEOUT_ENV in os.environ
                               else None),
        })
        return meta

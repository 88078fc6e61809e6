"""torch DistributedDataParallel over Gloo, NCCL or MPI.

The process group is created with the backend's timeout (so a dead peer becomes
an error, not a hang) from a store found by hvd_vs_ddp.backends.rendezvous, and destroyed
on close. Gradient accumulation uses DDP's no_sync(); compression uses DDP's
communication hooks (fp16_compress_hook, bf16_compress_hook, PowerSGD with warm
start and error feedback); bucket_mb sets bucket_cap_mb; gradient_as_bucket_view
and static_graph are DDP's own flags. Horovod-only options are refused.

    torchrun --nproc-per-node 2 -m pytest suites/ -k ddp-gloo
    mpirun -np 2 python -m pytest suites/ -k ddp-mpi
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Mapping

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from hvd_vs_ddp.backends import placement
from hvd_vs_ddp.backends.base import Availability, Backend, BackendUnavailable, check_op
from hvd_vs_ddp.backends.compile_support import COMPILED_AUTOGRAD, DDP_FIRST_BUCKET_MB, INDUCTOR
from hvd_vs_ddp.backends.env import LauncherEnv
from hvd_vs_ddp.backends.rendezvous import job_store, store_for

_OPS = {
    "sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX,
    "product": dist.ReduceOp.PRODUCT, "avg": dist.ReduceOp.AVG,
}

# torch 2.14 renamed all_gather_into_tensor (now deprecated) to all_gather_single.
_all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


class _DDPBackend(Backend):
    """Shared by every torch.distributed transport; subclasses name the pg backend."""

    pg_backend: str

    @classmethod
    def compile_conflict(cls, mode, options) -> str | None:
        if mode == INDUCTOR and options.bucket_mb is not None \
                and options.bucket_mb < DDP_FIRST_BUCKET_MB:
            return (f"bucket_mb {options.bucket_mb:g} is below DDP's first bucket (1 MiB): "
                    "Dynamo's DDP optimizer fails at compile time ('First bucket should be "
                    "smaller/equal to other buckets'); use bucket_mb >= 1")
        if mode == COMPILED_AUTOGRAD and options.compression != "none":
            return ("DDP's python reducer calls a comm hook per parameter as hook(state, "
                    "(grad, param)), not with a GradBucket, so torch's compression hooks "
                    "do not apply")
        if mode == COMPILED_AUTOGRAD and (options.static_graph
                                          or options.gradient_as_bucket_view):
            return ("static_graph and gradient_as_bucket_view are flags of DDP's C++ "
                    "reducer, which the python reducer replaces: they would do nothing")
        if mode == COMPILED_AUTOGRAD and options.accumulation_steps > 1:
            return ("no_sync with the python reducer under compiled autograd (its hooks "
                    "traced once, then replayed) is not verified here; use inductor")
        return None

    def _setup(self) -> None:
        if dist.is_initialized():
            raise RuntimeError(f"{self.name}: a torch.distributed process group already "
                               "exists in this process; close the previous backend first")
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        if self.world_size > 1 and self.placement is not None:
            # every rank's GPU (by UUID) before NCCL sees a duplicate: one line, all ranks
            try:
                placement.agree_in_store(job_store(self.env, self.timeout), self.placement,
                                         self.world_size, self.options.timeout_s)
            except placement.PlacementError as exc:
                raise BackendUnavailable(f"{self.name}: {exc}") from None
        dist.init_process_group(self._pg_name(), store=store_for(self.env, self.timeout),
                                rank=self.rank, world_size=self.world_size,
                                timeout=self.timeout)

    def _pg_name(self) -> str:
        return self.pg_backend

    def _close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()

    # DDP's constructor broadcasts rank 0's parameters and buffers (ranks build their
    # models from different seeds: workloads/loop.py init_seed). tests/plugins/
    # mutations.py turns it off, as it replaces the averaging (comm_hook) and the
    # reduction (accumulate), to prove the suites fail without it.
    init_sync: bool = True

    def prepare(self, model, optimizer):
        model = model.to(self.device)
        kwargs: dict[str, Any] = {}
        if self.device.type == "cuda":
            kwargs["device_ids"] = [self.device.index]
        opts = self.options
        if opts.bucket_mb is not None:
            kwargs["bucket_cap_mb"] = opts.bucket_mb
        if not self.init_sync:
            kwargs["init_sync"] = False  # torch >= 2.4
        ddp = DistributedDataParallel(  # broadcasts rank 0's parameters
            model, gradient_as_bucket_view=opts.gradient_as_bucket_view,
            static_graph=opts.static_graph, **kwargs)
        hook = comm_hook(opts.compression, opts.powersgd_rank)
        if hook is not None:
            ddp.register_comm_hook(*hook)
        self._broadcast_optimizer_state(optimizer)
        return ddp, optimizer

    def _broadcast_optimizer_state(self, optimizer) -> None:
        # Fresh optimizers have no state; a resumed one must start alike everywhere.
        if any(optimizer.state.values()):
            optimizer.load_state_dict(self.broadcast_object(optimizer.state_dict()))

    @contextlib.contextmanager
    def accumulate(self, model, last: bool) -> Iterator[None]:
        if last or not isinstance(model, DistributedDataParallel):
            yield
        else:
            with model.no_sync():
                yield

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        check_op(op)
        if op == "avg" and self.pg_backend != "nccl":
            # Gloo has no AVG: sum, then divide (integers by floor division).
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
            if tensor.is_floating_point():
                tensor.div_(self.world_size)
            else:
                tensor.floor_divide_(self.world_size)
            return tensor
        dist.all_reduce(tensor, op=_OPS[op])
        return tensor

    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        dist.broadcast(tensor, src=src)
        return tensor

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.new_empty((self.world_size * tensor.shape[0], *tensor.shape[1:]))
        _all_gather_single(out, tensor.contiguous())
        return out

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        box = [obj]
        dist.broadcast_object_list(box, src=src, device=self._object_device())
        return box[0]

    def all_gather_object(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def _object_device(self) -> torch.device | None:
        return self.device if self.pg_backend == "nccl" else torch.device("cpu")

    def barrier(self) -> None:
        if self.pg_backend == "nccl":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()

    def metadata(self):
        meta = super().metadata()
        meta["process_group"] = self.pg_backend
        if self.pg_backend == "nccl" and torch.cuda.is_available():
            meta["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        return meta


# PowerSGD compresses from this iteration on (torch's default, 1000, would leave every
# step of a benchmark uncompressed; warm start and error feedback need at least 2).
POWERSGD_START_ITER = 2


def comm_hook(compression: str, powersgd_rank: int = 1) -> tuple[Any, Any] | None:
    """(state, hook) for DistributedDataParallel.register_comm_hook, or None."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if compression == "fp16":
        return dist.group.WORLD, default_hooks.fp16_compress_hook
    if compression == "bf16":
        return dist.group.WORLD, default_hooks.bf16_compress_hook
    if compression == "powersgd":
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=powersgd_rank,
            start_powerSGD_iter=POWERSGD_START_ITER, use_error_feedback=True,
            warm_start=True)
        return state, powerSGD_hook.powerSGD_hook
    return None


def gpus_fit(local_size: int, gpus: int, visible: str | None,
             environ: Mapping[str, str] | None = None) -> Availability:
    """NCCL needs one GPU per rank (backends/placement.py decides): a scheduler that binds
    GPUs per rank (Slurm --gpus-per-task, a CUDA_VISIBLE_DEVICES per rank) shows each rank
    fewer GPUs than there are ranks on the host: that fits, and the ranks' GPU UUIDs are
    compared at setup (placement.agree); the same GPUs shown to every rank (nothing
    hidden, or Slurm's whole SLURM_STEP_GPUS) and fewer than the ranks does not."""
    environ = dict(environ or {})
    if visible is not None:
        environ["CUDA_VISIBLE_DEVICES"] = visible
    names = placement.visible_devices(environ, gpus)
    if not names:
        return Availability(False, "no CUDA device visible; NCCL needs one GPU per rank")
    why = placement.refusal(LauncherEnv("plan", 0, local_size, 0, local_size, 0), names,
                            environ, nccl=True)
    return Availability(False, why) if why else Availability(True)


class DDPGlooBackend(_DDPBackend):
    name = "ddp-gloo"
    pg_backend = "gloo"

    @classmethod
    def availability(cls) -> Availability:
        if not dist.is_available():
            return Availability(False, "this torch build has no torch.distributed")
        if not dist.is_gloo_available():
            return Availability(False, "this torch build has no Gloo backend")
        return Availability(True)


class DDPNCCLBackend(_DDPBackend):
    name = "ddp-nccl"
    pg_backend = "nccl"

    @classmethod
    def availability(cls) -> Availability:
        if not torch.cuda.is_available():
            return Availability(False, "no CUDA device visible")
        if not dist.is_nccl_available():
            return Availability(False, "this torch build has no NCCL backend")
        return Availability(True)

    @classmethod
    def launch_fit(cls, env) -> Availability:
        fit = gpus_fit(env.local_size, torch.cuda.device_count(),
                       os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ)
        return fit if not fit else super().launch_fit(env)


class DDPMPIBackend(_DDPBackend):
    """torch's native MPI process group when built in, else hvd_vs_ddp.backends.mpi_pg (mpi4py)."""

    name = "ddp-mpi"
    pg_backend = "mpi"

    @classmethod
    def availability(cls) -> Availability:
        if dist.is_mpi_available():
            return Availability(True, "native torch MPI backend")
        try:
            from hvd_vs_ddp.backends import mpi_pg
        except ImportError as exc:
            return Availability(False, f"torch has no MPI backend and {exc}")
        return mpi_pg.is_available()

    @classmethod
    def compile_conflict(cls, mode, options) -> str | None:
        if mode == INDUCTOR and not dist.is_mpi_available():
            return ("Dynamo traces DDP's forward into the mpi4py process group (a Python "
                    "ProcessGroup) and fails there ('Attempted to access unregistered member "
                    "on an OpaqueObject', torch 2.14.1); compiled-autograd runs")
        return super().compile_conflict(mode, options)

    def _pg_name(self) -> str:
        if dist.is_mpi_available():
            return "mpi"
        from hvd_vs_ddp.backends import mpi_pg
        return mpi_pg.register()

    def _setup(self) -> None:
        if dist.is_mpi_available():
            dist.init_process_group("mpi", timeout=self.timeout)
            return
        super()._setup()

    def metadata(self):
        meta = super().metadata()
        if dist.is_mpi_available():
            meta["mpi_implementation"] = "torch-native"
        else:
            from hvd_vs_ddp.backends import mpi_pg
            meta["mpi_implementation"] = "mpi4py"
            meta["mpi"] = mpi_pg.describe()
        return meta

"""The one training interface every backend implements.

A backend knows how to join the job (`setup`), wrap a model and optimizer for
data-parallel training (`prepare`), run gradient accumulation without
communicating (`accumulate`), take an optimizer step (`step`, which also holds
the mixed-precision pattern), and talk to the other ranks (`all_reduce`,
`broadcast_object`, `barrier`). It never changes hyperparameters: the model,
optimizer, learning rate and batch it is given are the ones it trains with.

    from hvd_vs_ddp.backends import registry
    backend = registry.create("ddp-gloo", BackendOptions())
    backend.setup(); model, opt = backend.prepare(model, opt); ...; backend.close()
"""
from __future__ import annotations

import abc
import contextlib
import datetime
from dataclasses import asdict, dataclass
from typing import Any, Callable, ClassVar, Iterator

import torch

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.backends.env import LauncherEnv, detect
from hvd_vs_ddp.common.availability import Availability

REDUCE_OPS = ("sum", "avg", "min", "max", "product")
COMPRESSIONS = ("none", "fp16", "bf16", "powersgd")


class BackendUnavailable(RuntimeError):
    """This backend cannot run here; the message says why and what to do."""


@dataclass(frozen=True)
class BackendOptions:
    """Knobs of the communication layer. Each one is recorded in the results.

    accumulation_steps: backward passes per optimizer step (DDP: no_sync on all
        but the last; Horovod: backward_passes_per_step).
    compression: "none" or "fp16" (DDP: fp16_compress_hook; Horovod:
        hvd.Compression.fp16); DDP only: "bf16" (bf16_compress_hook) and
        "powersgd" (PowerSGD hook, rank `powersgd_rank`, warm start and error feedback).
    bucket_mb: DDP bucket_cap_mb and Horovod HOROVOD_FUSION_THRESHOLD (MiB);
        None keeps each library's default (DDP 25 MiB, Horovod 128 MiB).
    gradient_as_bucket_view, static_graph: DDP's constructor flags of those names.
    cycle_time_ms: Horovod HOROVOD_CYCLE_TIME; None keeps its default.
    adasum: Horovod reduces with op=hvd.Adasum instead of Average (other maths).
    hierarchical: Horovod HOROVOD_HIERARCHICAL_ALLREDUCE (meaningful with > 1 host).
    autotune_log: Horovod HOROVOD_AUTOTUNE=1, its log written to this path.
    timeout_s: bound on every collective; a dead peer becomes an error.
    device: "auto" (GPU per local rank when the backend uses GPUs) or "cpu".
    """

    accumulation_steps: int = 1
    compression: str = "none"
    bucket_mb: float | None = None
    timeout_s: float = 300.0
    device: str = "auto"
    powersgd_rank: int = 1
    gradient_as_bucket_view: bool = False
    static_graph: bool = False
    cycle_time_ms: float | None = None
    adasum: bool = False
    hierarchical: bool = False
    autotune_log: str | None = None

    def __post_init__(self) -> None:
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {self.accumulation_steps}")
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}, "
                             f"got {self.compression!r}")
        if self.powersgd_rank < 1:
            raise ValueError(f"powersgd_rank must be >= 1, got {self.powersgd_rank}")
        if self.cycle_time_ms is not None and self.cycle_time_ms <= 0:
            raise ValueError(f"cycle_time_ms must be > 0, got {self.cycle_time_ms}")
        if self.bucket_mb is not None and self.bucket_mb <= 0:
            raise ValueError(f"bucket_mb must be > 0, got {self.bucket_mb}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.device not in ("auto", "cpu"):
            raise ValueError(f"device must be 'auto' or 'cpu', got {self.device!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Backend(abc.ABC):
    """One way of training data-parallel. Subclasses are registered by name."""

    name: ClassVar[str]
    uses_gpu: ClassVar[bool] = False   # True: needs a CUDA device
    distributed: ClassVar[bool] = True  # False: runs in one process only
    # What its ranks need from the launcher (hvd_vs_ddp/backends/launchers.py: RANKS, MPI, HOROVOD).
    requires: ClassVar[frozenset[str]] = frozenset({launchers.RANKS})
    # True: its collectives are another backend's (fsdp, zero: DDP's process group), so
    # the collectives suite does not measure them twice.
    reuses_collectives: ClassVar[bool] = False
    # -- compile (hvd_vs_ddp/backends/compile_support.py: the modes, the one refusal check)
    # The compile modes it honours, and why it refuses the others (one line each).
    compile_modes: ClassVar[frozenset[str]] = frozenset({"eager"})
    compile_refusals: ClassVar[dict[str, str]] = {}

    def __init__(self, options: BackendOptions | None = None,
                 env: LauncherEnv | None = None) -> None:
        self.options = options or BackendOptions()
        self.env = env or detect()
        self.device = torch.device("cpu")
        self._ready = False

    # -- can it run here? ------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def availability(cls) -> Availability:
        """Whether this backend can run on this machine, and if not, why."""

    @classmethod
    def launch_fit(cls, env: LauncherEnv) -> Availability:
        """Whether the launcher that started this job can run this backend."""
        if not cls.distributed and env.world_size > 1:
            return Availability(False, f"runs in one process, but {env.launcher} started "
                                       f"{env.world_size} ranks; launch it without a launcher")
        if not cls.distributed:
            return Availability(True)
        return launchers.fit(cls.name, cls.requires, env.launcher, env.world_size)

    def check_launch(self) -> None:
        """Raise BackendUnavailable when the launcher does not fit this backend."""
        fit = self.launch_fit(self.env)
        if not fit:
            raise BackendUnavailable(f"{self.name}: {fit.reason}")

    @classmethod
    def option_conflict(cls, options: BackendOptions) -> str | None:
        """Why this backend cannot honour `options` (a knob it has no equivalent of)."""
        return None

    @classmethod
    def compile_conflict(cls, mode: str, options: BackendOptions) -> str | None:
        """Why compile `mode` (one it honours) cannot go with `options`, or None."""
        return None

    def compile_targets(self, model: torch.nn.Module) -> list[torch.nn.Module] | None:
        """The modules whose forward torch.compile compiles, each in place, after
        prepare(); None: the whole prepared model (DDP's documented way: compile the
        DDP-wrapped module)."""
        return None

    # -- life cycle ------------------------------------------------------
    def setup(self) -> "Backend":
        avail = self.availability()
        if not avail:
            raise BackendUnavailable(f"{self.name}: {avail.reason}")
        self.check_launch()
        self.device = self._pick_device()
        self._setup()
        self._ready = True
        return self

    @abc.abstractmethod
    def _setup(self) -> None: ...

    def close(self) -> None:
        if self._ready:
            self._close()
            self._ready = False

    def _close(self) -> None:  # noqa: B027 - optional hook: most backends keep nothing
        pass

    def __enter__(self) -> "Backend":
        return self.setup()

    def __exit__(self, *exc) -> None:
        self.close()

    def _pick_device(self) -> torch.device:
        if self.options.device == "cpu" or not torch.cuda.is_available():
            if self.uses_gpu:
                raise BackendUnavailable(f"{self.name}: no CUDA device visible")
            return torch.device("cpu")
        return torch.device("cuda", self.env.local_rank % torch.cuda.device_count())

    # -- who am I --------------------------------------------------------
    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    @property
    def local_rank(self) -> int:
        return self.env.local_rank

    @property
    def timeout(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self.options.timeout_s)

    # -- training --------------------------------------------------------
    @abc.abstractmethod
    def prepare(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer
                ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        """Wrap for data-parallel training; every rank starts from rank 0's state."""

    @contextlib.contextmanager
    def accumulate(self, model: torch.nn.Module, last: bool) -> Iterator[None]:
        """Context for one backward pass; `last` is the pass that communicates."""
        yield

    def zero_grad(self, optimizer: torch.optim.Optimizer, set_to_none: bool = True) -> None:
        optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, optimizer: torch.optim.Optimizer, scaler: Any = None,
             before_step: Callable[[], None] | None = None) -> None:
        """Optimizer step after the gradients are reduced.

        `scaler` is a torch.amp.GradScaler (fp16) or None. `before_step` runs when
        the gradients are final (averaged and unscaled), before they are applied.
        """
        if scaler is not None:
            scaler.unscale_(optimizer)
        if before_step is not None:
            before_step()
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()

    # -- communication ---------------------------------------------------
    @abc.abstractmethod
    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """Reduce across ranks; returns the result (may be `tensor`, updated in place)."""

    @abc.abstractmethod
    def broadcast(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        """Rank `src`'s tensor on every rank (in place where the library allows)."""

    @abc.abstractmethod
    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every rank's tensor concatenated along dim 0, in rank order."""

    @abc.abstractmethod
    def broadcast_object(self, obj: Any, src: int = 0) -> Any: ...

    @abc.abstractmethod
    def barrier(self) -> None: ...

    def all_gather_object(self, obj: Any) -> list[Any]:
        """Every rank's object, in rank order (built on broadcast_object)."""
        return [self.broadcast_object(obj if r == self.rank else None, src=r)
                for r in range(self.world_size)]

    def synchronize(self) -> None:
        """Wait for the device, so that a clock read after it is honest."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # -- what the result depends on --------------------------------------
    def metadata(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "launcher": self.env.launcher,
            "world_size": self.world_size,
            "local_size": self.env.local_size,
            "device": str(self.device),
            "options": self.options.as_dict(),
            "torch": torch.__version__,
        }


def check_op(op: str) -> str:
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}; expected one of {', '.join(REDUCE_OPS)}")
    return op

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
from typing import Any, Callable, ClassVar, Iterator

import torch

from hvd_vs_ddp.backends import catalog, compile_support, launchers, placement
from hvd_vs_ddp.backends.catalog import Capabilities
from hvd_vs_ddp.backends.env import LauncherEnv, detect
from hvd_vs_ddp.backends.options import COMPRESSIONS, BackendOptions
from hvd_vs_ddp.common.availability import Availability

__all__ = ["COMPRESSIONS", "REDUCE_OPS", "Availability", "Backend", "BackendOptions",
           "BackendUnavailable", "Capabilities", "check_op"]

REDUCE_OPS = ("sum", "avg", "min", "max", "product")


class BackendUnavailable(RuntimeError):
    """This backend cannot run here; the message says why and what to do."""


class Backend(abc.ABC):
    """One way of training data-parallel. A concrete subclass names itself (`name`) and
    gets its declaration, `capabilities`, from the catalog (catalog.py): what it is and
    what it honours is stated there once; the class holds only its behaviour."""

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            cls.capabilities = catalog.get(cls.name)

    def __init__(self, options: BackendOptions | None = None,
                 env: LauncherEnv | None = None) -> None:
        self.options = options or BackendOptions()
        self.env = env or detect()
        self.device = torch.device("cpu")
        self.placement: placement.Placement | None = None  # set by setup (_pick_device)
        self.judged = False  # set by setup: its cell's plan judged it (compile modes too)
        self._ready = False

    # -- can it run here? ------------------------------------------------
    # One judgement (`judge`); the four classmethods under it are its parts, each one a
    # backend overrides where it differs: installed here (`availability`), started by a
    # launcher that fits (`launch_fit`), the options honoured (`option_conflict`: the
    # catalog row, then what this process already fixed), the compile mode with those
    # options (`compile_conflict`, asked by compile_support.refusal). Nothing outside
    # hvd_vs_ddp/backends/ calls the parts: the matrix, the run request, the cell plan
    # (hvd_vs_ddp/harness/cell_plan.py) and setup ask `judge`.
    @classmethod
    def judge(cls, launch: LauncherEnv | None = None,
              options: BackendOptions | None = None, compile: str = "eager",
              cuda: bool | None = None, installed: bool = True) -> Availability:
        """Whether this backend can run here, started as `launch` (None: not asked), with
        `options` (None: not asked) in compile mode `compile`; if not, one line saying why
        (without the backend's name: the caller says whose line it is). `installed=False`:
        whether it is installed here is not asked (the matrix lays out a preset's cells
        before the run request leaves out those of backends missing here)."""
        avail = cls.availability() if installed else Availability(True)
        if not avail:
            return avail
        if launch is not None:
            fit = cls.launch_fit(launch)
            if not fit:
                return fit
        if options is not None:
            conflict = cls.option_conflict(options, launch)
            if conflict:
                return Availability(False, conflict)
        if compile != "eager":
            refused = compile_support.refusal(cls, compile, options, cuda=cuda)
            if refused:
                return Availability(False, refused)
        return avail

    @classmethod
    @abc.abstractmethod
    def availability(cls) -> Availability:
        """Whether this backend is installed and usable on this machine, and if not, why."""

    @classmethod
    def launch_fit(cls, env: LauncherEnv) -> Availability:
        """Whether the launcher that started this job can run this backend."""
        caps = cls.capabilities
        if not caps.distributed and env.world_size > 1:
            return Availability(False, f"runs in one process, but {env.launcher} started "
                                       f"{env.world_size} ranks; launch it without a launcher")
        if not caps.distributed:
            return Availability(True)
        return launchers.fit(cls.name, caps.requires, env.launcher, env.world_size)

    @classmethod
    def option_conflict(cls, options: BackendOptions,
                        launch: LauncherEnv | None = None) -> str | None:
        """Why this backend cannot honour `options` (started as `launch`, where known):
        what its declaration does not honour (catalog.conflict); a backend whose settings
        depend on its launcher or are fixed per process (Horovod) adds those."""
        return catalog.conflict(cls.name, options, on_gpu=torch.cuda.is_available())

    @classmethod
    def compile_conflict(cls, mode: str, options: BackendOptions) -> str | None:
        """Why compile `mode` (one its catalog row honours) cannot go with `options`, or
        None (hvd_vs_ddp/backends/compile_support.py asks it)."""
        return None

    def compile_targets(self, model: torch.nn.Module) -> list[torch.nn.Module] | None:
        """The modules whose forward torch.compile compiles, each in place, after
        prepare(); None: the whole prepared model (DDP's documented way: compile the
        DDP-wrapped module)."""
        return None

    # -- life cycle ------------------------------------------------------
    def setup(self, judged: bool = False) -> "Backend":
        """Join the job. `judged`: its cell's plan already judged this backend, launcher
        and options (hvd_vs_ddp/harness/cell_plan.py), so it is not judged again."""
        if not judged:
            verdict = self.judge(self.env, self.options)
            if not verdict:
                raise BackendUnavailable(f"{self.name}: {verdict.reason}")
        self.judged = judged
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
        """This rank's device, decided where every placement is (backends/placement.py):
        one GPU per rank, refused in one line where a GPU would be shared."""
        caps = self.capabilities
        try:
            device, self.placement = placement.device_for(
                self.env, self.options.device, caps.needs_gpu, caps.gpu_per_rank, self.name)
        except placement.PlacementError as exc:
            msg = str(exc)
            raise BackendUnavailable(msg if msg.startswith(self.name) else
                                     f"{self.name}: {msg}") from None
        return device

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

    def devices_in_use(self) -> list[int]:
        """GPUs besides this rank's own whose peak memory the suites should record (its
        imbalance across them); none for a backend that trains on one device per rank."""
        return []

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

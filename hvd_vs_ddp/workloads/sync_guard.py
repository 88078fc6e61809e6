"""The guard that keeps the harness's own code out of a timed step's critical path.

On a GPU the CPU must stay ahead of the device, or a figure measures the host: a
`.item()`, a `.cpu()`, a copy from pageable memory or a `torch.cuda.synchronize()` made by
the harness between a library's calls drains the device's queue every step and pulls every
Horovod/DDP ratio toward 1 (docs/methodology.md "What a timed step holds").
The training loop (hvd_vs_ddp/workloads/loop.py) wraps the code that is the harness's,
not the library's nor the model's (fetching and placing the batch, keeping the loss,
marking the step's events), in `harness(device)`; inside it

- every torch call that makes the host wait for a device, or would where the tensors are
  on a GPU, raises `HarnessSync` with the call and the stack that made it: reading a value
  to the host (`item`, `tolist`, `numpy`, `bool()`/`int()`/`float()` of a tensor, a copy
  to the CPU: of a GPU tensor always, of a CPU tensor where our code, not torch's own,
  made the call) and a host-to-device copy from pageable memory (`to`, `cuda`, `copy_` of an
  unpinned CPU tensor to a GPU). This part is torch's function-mode hook (Python
  `__torch_function__`, thread-local), so it works, and is tested, on a CPU machine: a
  `.item()` put back into the step fails every cell there too, before a GPU sees it;
- on a GPU, torch's own detector is on as well (`torch.cuda.set_sync_debug_mode("error")`),
  which catches what Python cannot see (a synchronizing kernel launch, an allocator's
  wait), and its error is turned into `HarnessSync` the same way.

The library's own waits (Horovod's `synchronize()` before its optimizer step, DDP's
bucket waits) are outside the guard: they are the library's cost and stay in its figure.

    from hvd_vs_ddp.workloads import sync_guard
    with sync_guard.harness(torch.device("cpu")):
        torch.ones(2).sum().item()        # HarnessSync: Tensor.item ... (the stack)
    python -m hvd_vs_ddp.workloads.sync_guard    # lists what the guard refuses
"""
from __future__ import annotations

import contextlib
import os
import sys
import traceback
from types import FrameType
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode, _get_current_function_mode, _pop_mode_temporarily

# Calls that read a device value on the host: each waits for the device's queue.
READS = {
    torch.Tensor.item: "Tensor.item",
    torch.Tensor.tolist: "Tensor.tolist",
    torch.Tensor.numpy: "Tensor.numpy",
    torch.Tensor.__bool__: "bool(Tensor)",
    torch.Tensor.__int__: "int(Tensor)",
    torch.Tensor.__float__: "float(Tensor)",
    torch.Tensor.__index__: "index(Tensor)",
    torch.Tensor.nonzero: "Tensor.nonzero (its size is read on the host)",
    torch.nonzero: "torch.nonzero (its size is read on the host)",
    torch.Tensor.cpu: "Tensor.cpu",
}
# Calls that copy between host and device: allowed only as an asynchronous copy from
# pinned memory to a GPU (or where no GPU is involved).
COPIES = {torch.Tensor.to: "Tensor.to", torch.Tensor.cuda: "Tensor.cuda",
          torch.Tensor.copy_: "Tensor.copy_"}


TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
OVERRIDES = os.path.join("torch", "overrides.py")  # the function-mode dispatch's own frames


class HarnessSync(RuntimeError):
    """The harness made the host wait for the device inside a timed step."""


def _target(func: Any, args: tuple, kwargs: dict) -> torch.device | None:
    """The device a `to` / `cuda` / `copy_` call moves data to (None: not a move)."""
    if func is torch.Tensor.cuda:
        dev = args[1] if len(args) > 1 else kwargs.get("device")
        return torch.device("cuda" if dev is None else
                            (f"cuda:{dev}" if isinstance(dev, int) else dev))
    if func is torch.Tensor.copy_:
        return args[0].device if args and isinstance(args[0], torch.Tensor) else None
    for a in (*args[1:], *kwargs.values()):  # Tensor.to(device | dtype | tensor, ...)
        if isinstance(a, torch.device):
            return a
        if isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda", "meta", "mps", "xpu"):
            return torch.device(a)
        if isinstance(a, torch.Tensor):
            return a.device
    return None


def _copy_problem(func: Any, args: tuple, kwargs: dict) -> str | None:
    """Why this copy makes the host wait, or None when it does not."""
    source = args[1] if func is torch.Tensor.copy_ else args[0]
    if not isinstance(source, torch.Tensor):
        return None
    target = _target(func, args, kwargs)
    if target is None or target.type == source.device.type:
        return None
    if source.device.type == "cuda" and target.type == "cpu":
        return "a copy from the GPU to the host (waits for the device)"
    if source.device.type == "cpu" and target.type == "cuda":
        if not source.is_pinned():
            return "a host-to-device copy from pageable memory (waits for the device's queue)"
        blocking = (not bool(kwargs.get("non_blocking", False))
                    if func is not torch.Tensor.copy_
                    else not bool(args[2] if len(args) > 2 else kwargs.get("non_blocking")))
        if blocking:
            return "a blocking host-to-device copy (non_blocking=False)"
    return None


def _torchs_own() -> bool:
    """Whether the call being checked was made by torch's own code (the DataLoader draws
    its workers' seeds with `.item()` of a CPU tensor when an epoch starts), not ours."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename == __file__
                                 or frame.f_code.co_filename.endswith(OVERRIDES)):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(TORCH_DIR)


def _read_problem(func: Any, args: tuple) -> str | None:
    """A read of a value on the host is refused where the tensor is on a GPU, and where it
    is not but our code made it: on a CPU run the training values sit where a GPU run's
    would be, so a read the harness puts into the step is caught here too."""
    what = READS.get(func)
    if what is None:
        return None
    tensor = args[0] if args and isinstance(args[0], torch.Tensor) else None
    on_gpu = tensor is not None and tensor.device.type != "cpu"
    return what if on_gpu or not _torchs_own() else None


class _Guard(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.pid = os.getpid()  # a process forked inside the guard is not guarded

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if os.getpid() != self.pid:
            return func(*args, **kwargs)
        what = _read_problem(func, args) if func in READS else None
        if what is None and func in COPIES:
            problem = _copy_problem(func, args, kwargs)
            if problem is not None:
                what = f"{COPIES[func]}: {problem}"
        if what is not None:
            raise HarnessSync(_message(what))
        return func(*args, **kwargs)


def _message(what: str) -> str:
    stack = [f for f in traceback.extract_stack() if f.filename != __file__
             and not f.filename.endswith(OVERRIDES)]
    where = "".join(traceback.format_list(stack[-6:]))
    return (f"the harness made the host wait for the device inside a timed step: {what}. "
            f"Only the library may wait there (hvd_vs_ddp/workloads/sync_guard.py); "
            f"called from:\n{where}")


class harness:  # noqa: N801 (used as a context manager, like a function)
    """The harness's own code of a timed step: refuse every call that waits for `device`.
    A class rather than a generator: it is entered a few times every step (about 2 us on
    the CPU here, measured by benchmarks/step_overhead.py)."""

    __slots__ = ("cuda", "enabled", "mode", "before")

    def __init__(self, device: torch.device, enabled: bool = True) -> None:
        self.enabled, self.cuda = enabled, device.type == "cuda"
        self.mode: _Guard | None = None
        self.before = 0

    def __enter__(self) -> None:
        if not self.enabled:
            return
        self.mode = _Guard()
        self.mode.__enter__()
        if self.cuda:
            self.before = torch.cuda.get_sync_debug_mode()
            torch.cuda.set_sync_debug_mode("error")

    def __exit__(self, kind, exc, tb) -> None:
        if not self.enabled:
            return
        if self.cuda:
            torch.cuda.set_sync_debug_mode(self.before)
        assert self.mode is not None  # entered
        self.mode.__exit__(kind, exc, tb)
        if (self.cuda and isinstance(exc, RuntimeError) and not isinstance(exc, HarnessSync)
                and "synchroniz" in str(exc)):
            raise HarnessSync(_message(f"torch's sync detector: {exc}")) from exc


@contextlib.contextmanager
def loader() -> Iterator[None]:
    """The input pipeline's own fetch inside a guarded section (the DataLoader, its
    dataset's decoding and augmentation: torch's and the workload's host work, what the
    `memory` and `jpeg` modes measure on purpose): not checked, and the guard taken off
    the stack meanwhile, so the loader's own ops cost nothing extra and the workers it
    forks carry no guard. Outside a guard: nothing to do."""
    if not isinstance(_get_current_function_mode(), _Guard):
        yield
        return
    cuda = torch.cuda.is_initialized()
    before = torch.cuda.get_sync_debug_mode() if cuda else 0
    with _pop_mode_temporarily():
        try:
            if cuda and before:
                torch.cuda.set_sync_debug_mode(0)
            yield
        finally:
            if cuda and before:
                torch.cuda.set_sync_debug_mode(before)


if __name__ == "__main__":
    print("inside a timed step the harness may not call:")
    for name in READS.values():
        print(f"  {name}")
    for name in COPIES.values():
        print(f"  {name} from pageable host memory to a GPU, blocking, or from a GPU "
              "to the host")
    print("  (on a GPU also whatever torch.cuda.set_sync_debug_mode('error') refuses)")

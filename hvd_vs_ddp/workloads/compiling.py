"""The compile axis in the one training loop: the same settings for every backend.

The loop (hvd_vs_ddp/workloads/loop.py) calls, for a TrainConfig whose `compile` is not
"eager" (hvd_vs_ddp/backends/compile_support.py has the modes and the refusals):

1. `configure(mode)` before the backend wraps the model: a fresh Dynamo (caches of
   earlier models in this process dropped), Dynamo's DDP mode (`ddp_optimizer` for
   inductor, `python_reducer` for compiled autograd: DDP reads it when it is built), and
   a private inductor cache for this process (`cache_state()`), so that compile time is
   a cold compile on this machine wherever it is measured, never a hit on another
   cell's artefacts. `use_cache(folder)` (the suites' --compile-cache) keeps one
   instead: the compile preset gives each cell its own, so its first repetition
   compiles cold and the later ones warm. A `TORCHINDUCTOR_CACHE_DIR` the user set to
   a folder other than inductor's default wins too. The state is recorded.
2. `apply(backend, model, mode)` after it: `torch.compile` of the wrapped model (DDP's
   documented way), or of each module the backend names (`Backend.compile_targets`:
   FSDP2's blocks); returns what the forward pass calls.
3. `step_context(mode)` around each optimizer step's forward and backward passes:
   compiled autograd for "compiled-autograd", nothing otherwise.

Global state this touches (restored to torch's defaults by every `configure`):
`torch._dynamo.config.optimize_ddp`, and what DDP's python reducer sets when it is built
(inductor's DDP fusion flags and Dynamo's inlining of torch.nn.parallel.distributed).

    from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer
    Trainer(workload, backend, TrainConfig(steps=5, compile="inductor")).run(5)
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import sys
import tempfile
from typing import Any, ContextManager, cast

import torch

from hvd_vs_ddp.backends.compile_support import COMPILED_AUTOGRAD, EAGER, check_mode

_DDP_MODULE = "torch.nn.parallel.distributed"  # DDP's python reducer inlines it
_CACHE: dict[str, str] = {}
# The cache folder the process started with: the user's own, or inductor's default that
# `import torch._dynamo` writes into the environment (of a parent process, too).
_START_CACHE = os.environ.get("TORCHINDUCTOR_CACHE_DIR")


def cache_state() -> str:
    """"cold: a private folder of this process", or the user's TORCHINDUCTOR_CACHE_DIR."""
    return _CACHE.get("state", "not used")


def use_cache(folder: str) -> None:
    """Compile into `folder` and keep it (the suites' --compile-cache): empty, the compile
    is cold; holding an earlier job's compile of the same graphs, it is warm."""
    path = os.path.abspath(os.path.expanduser(folder))
    os.makedirs(path, exist_ok=True)
    warm = any(os.scandir(path))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    _CACHE["state"] = (f"warm: {path} holds an earlier job's compile" if warm
                       else f"cold: {path} was empty")


def _private_cache() -> None:
    if "state" in _CACHE:
        return
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    if _START_CACHE and os.path.abspath(_START_CACHE) != os.path.abspath(default_cache_dir()):
        _CACHE["state"] = f"user's TORCHINDUCTOR_CACHE_DIR {_START_CACHE} (may be warm)"
        return
    folder = tempfile.mkdtemp(prefix="hvd-vs-ddp-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder  # inductor reads it at each use
    atexit.register(shutil.rmtree, folder, True)
    _CACHE["state"] = "cold: a private folder of this process"


def _restore_defaults() -> None:
    import torch._dynamo

    torch._dynamo.config.optimize_ddp = True  # torch's default: "ddp_optimizer"
    inductor = _inductor_config()
    if inductor is not None:
        inductor._fuse_ddp_communication = False
        inductor._fuse_ddp_bucket_size = 25
    from torch._dynamo import trace_rules

    if _DDP_MODULE in trace_rules.LEGACY_MOD_INLINELIST:
        trace_rules.LEGACY_MOD_INLINELIST.discard(_DDP_MODULE)
        trace_rules.get_legacy_mod_inlinelist.cache_clear()


def _inductor_config() -> Any:
    return getattr(sys.modules.get("torch._inductor"), "config", None)


def configure(mode: str) -> None:
    """Before the backend wraps the model: Dynamo's settings for `mode`."""
    check_mode(mode)
    if mode == EAGER and "torch._dynamo" not in sys.modules:
        return  # nothing was ever compiled in this process: nothing to restore
    _restore_defaults()
    if mode == EAGER:
        return
    import torch._dynamo

    _private_cache()
    torch._dynamo.reset()  # models compiled earlier in this process do not count
    torch._dynamo.config.optimize_ddp = ("python_reducer" if mode == COMPILED_AUTOGRAD
                                         else "ddp_optimizer")


def optimize_ddp() -> str:
    """Dynamo's DDP mode now (recorded with the results)."""
    import torch._dynamo.utils

    return str(torch._dynamo.utils.get_optimize_ddp_mode())


def apply(backend: Any, model: torch.nn.Module, mode: str) -> torch.nn.Module:
    """What the forward pass calls: `model` (as the backend prepared it), compiled."""
    if check_mode(mode) == EAGER:
        return model
    targets = backend.compile_targets(model)
    if targets is None:
        return cast(torch.nn.Module, torch.compile(model))  # an OptimizedModule
    for module in targets:  # in place: the backend's own hooks stay outside
        module.forward = torch.compile(module.forward)
    return model


@functools.cache
def _autograd_compiler() -> Any:
    return torch.compile(backend="inductor")


def step_context(mode: str) -> ContextManager[Any]:
    """Around one step's forward and backward passes."""
    if mode != COMPILED_AUTOGRAD:
        return contextlib.nullcontext()
    from torch._dynamo import compiled_autograd

    return compiled_autograd._enable(_autograd_compiler())

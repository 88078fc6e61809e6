"""Which compile modes a backend honours, and the one refusal check.

The compile axis (docs/compile.md) has three modes:

- `eager`: no compiler (every backend);
- `inductor`: `torch.compile` with the default inductor backend (C++ kernels on CPU,
  Triton on GPUs); DDP through Dynamo's DDP optimizer (`optimize_ddp="ddp_optimizer"`:
  the graph split at bucket boundaries so that allreduces still overlap backward);
- `compiled-autograd`: `torch.compile` of the forward and compiled autograd of the
  backward, DDP with `optimize_ddp="python_reducer"` (its C++ reducer replaced by
  per-parameter hooks that compiled autograd traces into the backward graph).

Each backend's catalog row declares what it honours (`compile_modes`) and why it refuses
the others (`compile_refusals`); its class says what conflicts with its other options
(`compile_conflict`).
`refusal(cls, mode, options)` is the one check everybody uses (the training loop, the
suites, the matrix): a one-line reason, or None when the backend and this torch can
honour the mode. The mode names are torch-free; only the torch check imports torch.

    from hvd_vs_ddp.backends import compile_support, registry
    compile_support.refusal(registry.get("horovod"), "compiled-autograd")  # the reason
    python -m hvd_vs_ddp.backends.registry --compile  # every backend x mode on this machine
"""
from __future__ import annotations

import functools
from typing import Any, Protocol

from hvd_vs_ddp.backends.catalog import Capabilities
from hvd_vs_ddp.backends.compile_modes import (  # noqa: F401 (the names, re-exported)
    COMPILED_AUTOGRAD,
    DDP_FIRST_BUCKET_MB,
    EAGER,
    INDUCTOR,
    MODES,
    check_mode,
)


@functools.cache
def torch_refusal(mode: str, cuda: bool = False) -> str | None:
    """Why this torch (and this machine) cannot compile in `mode`, or None (`cuda`: for
    GPU kernels, else inductor's C++ path)."""
    check_mode(mode)
    if mode == EAGER:
        return None
    import torch

    if not hasattr(torch, "compile"):
        return f"this torch ({torch.__version__}) has no torch.compile"
    import torch._dynamo

    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile does not support this Python or platform"
    if cuda:
        from torch.utils._triton import has_triton

        if not has_triton():
            return "inductor needs Triton for GPU kernels; pip install triton"
    else:
        try:
            from torch._inductor.cpp_builder import get_cpp_compiler

            get_cpp_compiler()
        except Exception as exc:  # InvalidCxxCompiler and friends
            return (f"inductor's CPU path needs a C++ compiler ({exc}); install "
                    "g++ (apt-get install g++) or set CXX")

    if mode == COMPILED_AUTOGRAD:
        from torch._dynamo import compiled_autograd

        if not hasattr(compiled_autograd, "_enable"):
            return f"this torch ({torch.__version__}) has no compiled autograd"
        if not hasattr(torch._dynamo.utils, "get_optimize_ddp_mode"):  # DDP reads it
            return f"this torch ({torch.__version__}) has no DDP python_reducer"
    return None


class CompileAware(Protocol):
    """What the refusal check reads of a backend class (hvd_vs_ddp.backends.base.Backend
    has it): its declaration and its conflict rule. A protocol, so that this module does
    not import the backend base class, which imports it."""
    name: str
    capabilities: Capabilities

    def compile_conflict(self, mode: str, options: Any) -> str | None: ...


def refusal(cls: CompileAware, mode: str, options: Any = None,
            cuda: bool | None = None) -> str | None:
    """One line saying why backend `cls` cannot run in compile `mode` with `options`
    (BackendOptions; None: the defaults) on this torch, or None when it can."""
    check_mode(mode)
    if mode == EAGER:
        return None
    caps = cls.capabilities
    if mode not in caps.compile_modes:
        why = caps.compile_refusals.get(mode, f"{cls.name} does not offer it")
        return f"compile mode {mode} refused: {why}"
    if options is None:
        from hvd_vs_ddp.backends.options import BackendOptions

        options = BackendOptions()
    conflict = cls.compile_conflict(mode, options)
    if conflict:
        return f"compile mode {mode} refused: {conflict}"
    if cuda is None:
        import torch

        cuda = caps.needs_gpu or torch.cuda.is_available()
    unable = torch_refusal(mode, cuda)
    return f"compile mode {mode} refused: {unable}" if unable else None


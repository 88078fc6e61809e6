"""The names of the compile axis (torch-free): what a catalog row and a knob set say.

- `eager`: no compiler (every backend);
- `inductor`: `torch.compile` with the default inductor backend;
- `compiled-autograd`: `torch.compile` of the forward and compiled autograd of the
  backward (DDP's python reducer).

hvd_vs_ddp/backends/compile_support.py holds the refusal check that needs torch.

    from hvd_vs_ddp.backends.compile_modes import MODES, check_mode
"""
from __future__ import annotations

EAGER, INDUCTOR, COMPILED_AUTOGRAD = "eager", "inductor", "compiled-autograd"
MODES = (EAGER, INDUCTOR, COMPILED_AUTOGRAD)
# DDP's first bucket (torch's _DEFAULT_FIRST_BUCKET_BYTES): Dynamo's DDP optimizer
# fails at compile time when bucket_cap_mb is smaller (DESIGN.md, verified 2026-11-25).
DDP_FIRST_BUCKET_MB = 1.0


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"compile mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode

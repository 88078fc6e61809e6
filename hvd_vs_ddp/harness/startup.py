"""Start-up time of a rank: from the launch to its suites being configured.

launchers.env() (and the spawn launcher's parent, when started by hand) put the launch
time in HVD_VS_DDP_LAUNCH_T0; suites/conftest.py calls `mark()` in pytest_configure.
The difference covers process creation, the interpreter, torch and pytest imports:
what a launcher costs before any training, e.g. `spawn` against `torchrun`.

    python -m hvd_vs_ddp.harness.spawn_ranks 2 -m pytest suites/test_throughput.py ...
    # each throughput record: startup_s, one value per rank
"""
from __future__ import annotations

import os
import time

LAUNCH_T0 = "HVD_VS_DDP_LAUNCH_T0"
_marked: float | None = None


def mark() -> None:
    global _marked
    if _marked is None:
        _marked = time.time()


def seconds() -> float | None:
    """Seconds from the launch to mark(); None when no launch time was given."""
    t0 = os.environ.get(LAUNCH_T0)
    if _marked is None or not t0:
        return None
    try:
        return max(0.0, _marked - float(t0))
    except ValueError:
        return None

"""The project's cache folder on this machine: what is kept between runs to save work
(Horovod's wheels, scripts/build_horovod.sh; the projected published rows,
hvd_vs_ddp/projection/row_cache.py; the tests' inductor cache, tests/system/test_compile.py).

$HVD_VS_DDP_CACHE, default ~/.cache/hvd-vs-ddp; `HVD_VS_DDP_CACHE=off`: nothing is kept.

    from hvd_vs_ddp.common.cache import cache_root
    root = cache_root()          # a Path, or None where keeping is off
"""
from __future__ import annotations

import os
from pathlib import Path

OFF = "off"


def cache_root() -> Path | None:
    root = os.environ.get("HVD_VS_DDP_CACHE") or str(Path.home() / ".cache" / "hvd-vs-ddp")
    return None if root == OFF else Path(root)

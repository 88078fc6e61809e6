"""Fault injection: one rank of a suites job kills itself (SIGKILL) as its first test runs,
or, with HVD_VS_DDP_TEST_KILL_LAUNCHER=1, kills its parent: the launcher (torchrun's agent).
With HVD_VS_DDP_TEST_KILL_ONLY=TEXT, only in a test whose node id holds TEXT (so that in a
run of several cells only the cells running that test die).

Loaded only by tests/system/test_kill_rank.py, through the environment of the job it starts:

    PYTEST_PLUGINS=tests.plugins.kill_rank HVD_VS_DDP_TEST_KILL_RANK=1 \
        torchrun --nproc-per-node 2 -m pytest suites/ ...

The suites and their runtime (hvd_vs_ddp/harness/) know nothing of it.
"""
from __future__ import annotations

import os
import signal

import pytest

from hvd_vs_ddp.backends.env import detect

VICTIM_ENV = "HVD_VS_DDP_TEST_KILL_RANK"
LAUNCHER_ENV = "HVD_VS_DDP_TEST_KILL_LAUNCHER"
ONLY_ENV = "HVD_VS_DDP_TEST_KILL_ONLY"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    victim, env = os.environ.get(VICTIM_ENV), detect()
    only = os.environ.get(ONLY_ENV)
    if only is not None and only not in item.nodeid:
        return
    if victim is not None and int(victim) == env.rank and env.world_size > 1:
        if os.environ.get(LAUNCHER_ENV) == "1":
            os.kill(os.getppid(), signal.SIGKILL)  # the launcher dies mid-cell
            return
        os.kill(os.getpid(), signal.SIGKILL)  # a rank dies mid-cell

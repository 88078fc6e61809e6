"""A worker SIGKILLed under torchrun's elastic agents with torch.distributed.checkpoint and
under torchft (20-35 s each): the extended tier (tests/system/conftest.py: the tiers) of
tests/system/test_recovery.py, which says what is checked (its module-scoped fixture
`reference`, the uninterrupted run, is made once per module).

    python -m pytest tests/system/test_recovery_extended.py -q
"""
from __future__ import annotations

import pytest

from tests.system.test_recovery import (
    killed_worker_recovers,
    reference,  # noqa: F401 - the fixture: the uninterrupted run
)

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


@pytest.mark.parametrize("path, checkpoint, backend, driver_reads", [
    ("torchrun-elastic", "dcp", "ddp-gloo", "promptly"),
    ("torchft", "live", "ddp-gloo", "promptly"),
])
def test_killed_worker_recovers(tmp_path, monkeypatch, reference, path,  # noqa: F811 - fixture
                                checkpoint, backend, driver_reads):
    killed_worker_recovers(tmp_path, monkeypatch, reference, path, checkpoint, backend,
                           driver_reads)

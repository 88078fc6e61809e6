"""The mpi4py process group at 3 ranks (on 2 cores, reversed) and under the other progress
modes ("thread", "nonblocking", "sync"; a launch each, ~15 s): the extended tier
(tests/system/conftest.py: the tiers) of tests/system/test_mpi_pg.py, which says what is
checked and launches them (its module-scoped fixture `launches`, one per module).

    python -m pytest tests/system/test_mpi_pg_extended.py -v
"""
from __future__ import annotations

import pytest

from tests.system.test_mpi_pg import launches  # noqa: F401 - the fixture: one mpirun each

pytestmark = [pytest.mark.mpi, pytest.mark.multiproc, pytest.mark.extended]  # the tiers


@pytest.mark.parametrize("np_,part,progress", [
    (3, "collectives:--reverse-ranks", None),  # 3 ranks on 2 cores, reversed
    (2, "collectives", "thread"),
    (2, "collectives", "nonblocking"),
    (2, "collectives", "sync"),
], ids=["np3-reversed-ranks-inline", "np2-thread", "np2-nonblocking", "np2-sync"])
def test_collectives_match_numpy(launches, np_, part, progress):  # noqa: F811 - the imported fixture
    launches(np_, progress).part(part)


@pytest.mark.parametrize("np_,progress", [(3, None), (2, "thread"), (2, "nonblocking")],
                         ids=["np3-inline", "np2-thread", "np2-nonblocking"])
def test_ddp_matches_single_process(launches, np_, progress):  # noqa: F811 - the imported fixture
    launches(np_, progress).part("ddp")

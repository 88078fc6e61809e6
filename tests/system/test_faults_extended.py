"""A stuck rank under mpirun ends the whole job, naming the rank: the extended tier
(tests/system/conftest.py: the tiers) of tests/system/test_faults.py (torchrun's case is
in the core tier there; mpirun's killed ranks are named in the core tier by
tests/system/test_dead_rank.py under horovodrun's MPI path).

    python -m pytest tests/system/test_faults_extended.py -q
"""
from __future__ import annotations

import pytest

from tests.system.test_faults import stuck_rank_aborts_the_job_naming_it

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


@pytest.mark.parametrize("launcher", ["mpirun"])
def test_a_stuck_rank_aborts_the_job_naming_it(launcher):
    stuck_rank_aborts_the_job_naming_it(launcher)

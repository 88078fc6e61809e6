"""Two runs with the same seed give bitwise-identical losses, per backend, on the CPU.

Each backend's first run is a shared job (tests/system/jobs.py equivalence: the one
test_ddp_multiproc and test_horovod_multiproc check), the second its own run; for
ddp-gloo the two runs are tests/system/test_ddp_multiproc.py's two jobs at once.

    python -m pytest tests/system/test_repeatable.py -q
"""
from __future__ import annotations

import json

import pytest

from tests.system.jobs import equivalence, trained

pytestmark = pytest.mark.multiproc
CASES = [("single", "single"), ("ddp-mpi", "mpirun"), ("horovod", "horovodrun-gloo")]


@pytest.mark.parametrize("backend, launcher", CASES, ids=[c[0] for c in CASES])
def test_same_seed_same_losses_bitwise(jobs, backend, launcher):
    runs = []
    for run in (1, 2):
        folder = trained(jobs.get(equivalence(backend, launcher, run=run)))
        runs.append(json.loads((folder / "losses-accum1.json").read_text()))
    assert runs[0] == runs[1], f"{backend}: losses differ between two runs of one seed"

"""Two runs with the same seed give bitwise-identical losses, per backend, on the CPU."""
from __future__ import annotations

import json

import pytest

from tests.launch import explain, horovod_available, launched

pytestmark = pytest.mark.multiproc
CASES = [("single", "single", 1), ("ddp-gloo", "torchrun", 2), ("ddp-mpi", "mpirun", 2),
         ("horovod", "horovodrun-gloo", 2)]


@pytest.mark.parametrize("backend, launcher, ranks", CASES, ids=[c[0] for c in CASES])
def test_same_seed_same_losses_bitwise(tmp_path, backend, launcher, ranks):
    if backend == "horovod" and not horovod_available()[0]:
        pytest.skip(f"horovod: {horovod_available()[1]}")
    runs = []
    for i in range(2):
        out = tmp_path / f"losses{i}.json"
        proc = launched(launcher, ranks, ["tests/ranks/train_equivalence.py", backend,
                                          "--steps", "8", "--losses", str(out)])
        assert proc.returncode == 0, explain(proc)
        runs.append(json.loads(out.read_text()))
    assert runs[0] == runs[1], f"{backend}: losses differ between two runs of one seed"

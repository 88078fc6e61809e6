"""Placement judged by the matrix before any process starts.

- `--hosts` reaches the matrix: a launcher that takes hosts (mpirun, mpiexec, horovodrun)
  is judged by the ranks each host gets, so GPU cells above this host's GPU count are not
  refused with "use --hosts" when --hosts was given; torchrun and spawn start every rank
  here and say so.
- CPU-transport cells (ddp-gloo, ddp-mpi, the compute-only reference) have the one-GPU-
  per-rank rule too: without it, on a GPU machine two ranks share a GPU (its energy
  counted twice).

The host's GPU count is the one thing replaced (matrix._gpus), as tests/system/
test_selftest.py does.

    python -m pytest -p no:cacheprovider tests/unit/test_placement_matrix.py -q
"""
from __future__ import annotations

import pytest

from hvd_vs_ddp.cli import matrix, presets

FULL = presets.PRESETS["full"]


def test_hosts_place_horovod_gpu_cells_on_other_machines(monkeypatch):
    monkeypatch.setattr(matrix, "_gpus", lambda: 4)
    with pytest.raises(matrix.MatrixError, match="needs 8 GPUs on this host; 4 visible: "
                                                 r"one GPU per rank \(use --hosts"):
        matrix.cells(FULL, ["horovod"], [8])
    cells = matrix.cells(FULL, ["horovod"], [8], hosts="gpu01:4,gpu02:4")
    assert {c.launcher for c in cells if c.world_size == 8} >= {"horovodrun-gloo"}
    with pytest.raises(matrix.MatrixError, match="needs 6 GPUs on one of gpu01:6,gpu02:2"):
        matrix.cells(FULL, ["horovod"], [8], hosts="gpu01:6,gpu02:2")
    # torchrun starts every rank on this host, --hosts or not: refused, saying why
    with pytest.raises(matrix.MatrixError, match=r"\(torchrun starts every rank on this "):
        matrix.cells(FULL, ["ddp-nccl"], [8], hosts="gpu01:4,gpu02:4")


def test_cpu_transport_ranks_never_share_a_gpu(monkeypatch):
    monkeypatch.setattr(matrix, "_gpus", lambda: 1)
    with pytest.raises(matrix.MatrixError, match="ddp-gloo at world size 2 needs 2 GPUs"):
        matrix.cells(FULL, ["ddp-gloo"], [2])
    with pytest.raises(matrix.MatrixError, match="ddp-mpi at world size 2 needs 2 GPUs"):
        matrix.cells(FULL, ["ddp-mpi"], [2])
    cells = matrix.cells(FULL, world_sizes=[1, 2])
    assert not [c.id for c in cells if c.world_size == 2]  # compute-only included
    monkeypatch.setattr(matrix, "_gpus", lambda: 2)
    cells = matrix.cells(FULL, world_sizes=[2])
    assert {"ddp-gloo", "ddp-mpi", matrix.COMPUTE_ONLY} <= {c.backend for c in cells}


def test_no_gpu_keeps_every_cpu_cell(monkeypatch):
    monkeypatch.setattr(matrix, "_gpus", lambda: 0)
    assert matrix.gpu_refusal("ddp-gloo", "torchrun", 8, 0) is None
    assert {c.backend for c in matrix.cells(FULL, world_sizes=[4])} >= {"ddp-gloo", "ddp-mpi"}

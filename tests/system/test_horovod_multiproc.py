"""Horovod on real ranks: horovodrun --gloo and --mpi train like `single` and like DDP.

Each run trains 10 steps of the same seed with tests/ranks/train_equivalence.py:
step 1's averaged gradients equal single's on the concatenated batch (<= 1e-6);
the final weights of `horovod` and `ddp-gloo` agree within 1e-5.
"""
from __future__ import annotations

import pytest
import torch

from tests.launch import explain, horovod_available, launched

pytestmark = [pytest.mark.multiproc, pytest.mark.horovod]
WORKER = "tests/ranks/train_equivalence.py"


@pytest.fixture(autouse=True)
def _need_horovod():
    ok, why = horovod_available()
    if not ok:
        pytest.skip(f"horovod: {why}")


@pytest.mark.parametrize("launcher", ["horovodrun-gloo", "horovodrun-mpi"])
@pytest.mark.parametrize("accumulation", [1, 3])
def test_horovod_matches_single_and_ddp(tmp_path, launcher, accumulation):
    hvd_w, ddp_w = tmp_path / "hvd.pt", tmp_path / "ddp.pt"
    proc = launched(launcher, 2, [WORKER, "horovod", "--accumulation", str(accumulation),
                                  "--save", str(hvd_w)])
    assert proc.returncode == 0, explain(proc)
    proc = launched("torchrun", 2, [WORKER, "ddp-gloo", "--accumulation", str(accumulation),
                                    "--save", str(ddp_w)])
    assert proc.returncode == 0, explain(proc)
    diff = (torch.load(hvd_w) - torch.load(ddp_w)).abs().max().item()
    assert diff <= 1e-5, f"horovod and ddp-gloo weights differ by {diff:.3e} after 10 steps"


def test_ddp_runs_inside_horovodrun():
    """horovodrun sets no MASTER_ADDR: DDP bootstraps from Horovod's rendezvous."""
    proc = launched("horovodrun-gloo", 2, [WORKER, "ddp-gloo"])
    assert proc.returncode == 0, explain(proc)
    assert "ddp-gloo on horovodrun-gloo x2" in proc.stdout, explain(proc)

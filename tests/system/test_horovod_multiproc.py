"""Horovod on real ranks: horovodrun --gloo and --mpi train like `single` and like DDP.

Each run trains 10 steps of the same seed with tests/ranks/train_equivalence.py:
step 1's averaged gradients equal single's on the concatenated batch (<= 1e-6);
the final weights of `horovod` and `ddp-gloo` agree within 1e-5. The runs are shared
(tests/system/jobs.py equivalence): the ddp-gloo ones are test_ddp_multiproc's.

    python -m pytest tests/system/test_horovod_multiproc.py -q
"""
from __future__ import annotations

import pytest
import torch

from tests.launch import explain
from tests.system.jobs import equivalence, trained

pytestmark = [pytest.mark.multiproc, pytest.mark.horovod]


@pytest.mark.parametrize("launcher", ["horovodrun-gloo", "horovodrun-mpi"])
@pytest.mark.parametrize("accumulation", [1, 3])
def test_horovod_matches_single_and_ddp(jobs, launcher, accumulation):
    hvd = trained(jobs.get(equivalence("horovod", launcher)), accumulation)
    ddp = trained(jobs.get(equivalence("ddp-gloo", "torchrun")), accumulation)
    weights = f"weights-accum{accumulation}.pt"
    diff = (torch.load(hvd / weights) - torch.load(ddp / weights)).abs().max().item()
    assert diff <= 1e-5, f"horovod and ddp-gloo weights differ by {diff:.3e} after 10 steps"


def test_ddp_runs_inside_horovodrun(jobs):
    """horovodrun sets no MASTER_ADDR: DDP bootstraps from Horovod's rendezvous."""
    ran = jobs.get(equivalence("ddp-gloo", "horovodrun-gloo"))
    trained(ran)
    assert "ddp-gloo on horovodrun-gloo x2" in ran.proc.stdout, explain(ran.proc)

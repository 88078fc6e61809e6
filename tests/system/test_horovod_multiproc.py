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
from tests.system.jobs import SUITES, equivalence, trained

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
    """horovodrun sets no MASTER_ADDR: DDP bootstraps from Horovod's rendezvous. Read from
    the suites' shared job under horovodrun --gloo (tests/system/jobs.py SUITES), where
    ddp-gloo trains beside Horovod: its records say horovodrun and 2 ranks, and its
    convergence passed the weight check against the single-process reference."""
    ran = jobs.get(SUITES["horovodrun-gloo", 2])
    assert ran.proc.returncode == 0, explain(ran.proc)
    ddp = [b["extra_info"] for b in ran.results()["benchmarks"]
           if b["extra_info"].get("backend") == "ddp-gloo"]
    kinds = {e["kind"] for e in ddp}
    assert {"throughput", "convergence"} <= kinds, (kinds, explain(ran.proc))
    for e in ddp:
        meta = e.get("backend_meta") or {}
        assert (meta.get("launcher"), meta.get("world_size")) == ("horovodrun-gloo", 2), e
        if e["kind"] == "convergence":
            assert e["weights_equal_across_ranks"] is True, e
            assert e["weight_rel_dev"] <= e["weight_tolerance"], e

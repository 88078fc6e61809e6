"""DDP over Gloo on real ranks: the same training as `single` on the global batch.

torchrun and mpirun each start 2 ranks of tests/ranks/train_equivalence.py:
step 1's averaged gradients equal single's (<= 1e-6), every rank ends with the
same weights, and they are within 1e-5 of single's after 10 steps.
"""
from __future__ import annotations

import subprocess
import time

import pytest

from hvd_vs_ddp.backends import launchers
from tests.launch import ROOT, explain, launched

pytestmark = pytest.mark.multiproc
WORKER = ["tests/ranks/train_equivalence.py"]


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
@pytest.mark.parametrize("accumulation", [1, 3])
def test_ddp_gloo_matches_single(launcher, accumulation):
    proc = launched(launcher, 2, [*WORKER, "ddp-gloo", "--accumulation", str(accumulation)])
    assert proc.returncode == 0, explain(proc)
    assert "grad diff" in proc.stdout, explain(proc)


def test_two_torchrun_jobs_at_once_do_not_collide():
    env = launchers.env()
    env["PYTHONPATH"] = str(ROOT)
    cmd = launchers.command("torchrun", 2, [*WORKER, "ddp-gloo"])
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    deadline = time.monotonic() + 300
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=max(deadline - time.monotonic(), 1))
        outs.append(out)
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-4000:]


def test_mpirun_without_master_addr_shares_rank0_endpoint():
    """mpirun sets no MASTER_ADDR/PORT: rank 0 opens a store on a free port and broadcasts it."""
    proc = launched("mpirun", 2, ["-c", (
        "import os; from backends import registry;"
        "assert 'MASTER_PORT' not in os.environ;"
        "b = registry.create('ddp-gloo').setup();"
        "import torch; t = torch.ones(3) * (b.rank + 1); b.all_reduce(t);"
        "assert t.tolist() == [3.0] * 3, t; print('ok', b.rank); b.close()")])
    assert proc.returncode == 0 and proc.stdout.count("ok") == 2, explain(proc)

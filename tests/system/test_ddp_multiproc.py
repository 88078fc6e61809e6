"""DDP over Gloo on real ranks: the same training as `single` on the global batch.

torchrun and mpirun each start 2 ranks of tests/ranks/train_equivalence.py, which
trains at gradient accumulation 1 and then 3 (a backend set up per value, one launch;
each test reads its own value's verdict): step 1's averaged gradients equal single's
(<= 1e-6), every rank ends with the same weights, and they are within 1e-5 of single's
after 10 steps. The runs are
shared (tests/system/jobs.py equivalence): test_horovod_multiproc compares Horovod's
weights with the torchrun ones, test_two_hosts uses them as the one-host weights.

    python -m pytest tests/system/test_ddp_multiproc.py -q
"""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from hvd_vs_ddp.backends import launchers
from tests.launch import ROOT, explain, launched
from tests.system.jobs import EQUIVALENCE, equivalence, trained

pytestmark = pytest.mark.multiproc


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
@pytest.mark.parametrize("accumulation", [1, 3])
def test_ddp_gloo_matches_single(jobs, launcher, accumulation):
    ran = jobs.get(equivalence("ddp-gloo", launcher))
    trained(ran, accumulation)
    assert f"accumulation {accumulation}: grad diff" in ran.proc.stdout, explain(ran.proc)


@pytest.fixture(scope="module")
def two_at_once(tmp_path_factory):
    """Two torchrun jobs of the same seed started at the same moment (each picks its own
    free port): [(exit status, output, losses)] of both."""
    folder = tmp_path_factory.mktemp("two-at-once")
    env = launchers.env()
    env["PYTHONPATH"] = str(ROOT)
    procs = []
    for i in range(2):
        cmd = launchers.command("torchrun", 2, [EQUIVALENCE, "ddp-gloo", "--losses",
                                                str(folder / f"losses{i}.json")])
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + 300
    outs = [p.communicate(timeout=max(deadline - time.monotonic(), 1))[0] for p in procs]
    return [(p.returncode, out, folder / f"losses{i}.json")
            for i, (p, out) in enumerate(zip(procs, outs))]


def test_two_torchrun_jobs_at_once_do_not_collide(two_at_once):
    for code, out, _ in two_at_once:
        assert code == 0, out[-4000:]


def test_two_runs_of_one_seed_give_the_same_losses_bitwise(two_at_once):
    """(tests/system/test_repeatable.py's case for ddp-gloo: these two runs are its two.)"""
    for code, out, _ in two_at_once:
        assert code == 0, out[-4000:]
    first, second = (json.loads(path.read_text()) for _, _, path in two_at_once)
    assert first == second, "ddp-gloo: losses differ between two runs of one seed"


def test_mpirun_without_master_addr_shares_rank0_endpoint():
    """mpirun sets no MASTER_ADDR/PORT: rank 0 opens a store on a free port and broadcasts it."""
    proc = launched("mpirun", 2, ["-c", (
        "import os; from backends import registry;"
        "assert 'MASTER_PORT' not in os.environ;"
        "b = registry.create('ddp-gloo').setup();"
        "import torch; t = torch.ones(3) * (b.rank + 1); b.all_reduce(t);"
        "assert t.tolist() == [3.0] * 3, t; print('ok', b.rank); b.close()")])
    assert proc.returncode == 0 and proc.stdout.count("ok") == 2, explain(proc)

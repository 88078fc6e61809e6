"""Every rank gets the same intra-op threads under every launcher (hvd_vs_ddp/harness/threads.py).

torchrun sets OMP_NUM_THREADS=1, horovodrun and mpirun set nothing; before the suites
decided threads themselves, ranks under horovodrun ran one thread per core each (4
ranks on 2 cores: 11x slower). Each case reads every rank's actual
torch.get_num_threads() from the results of a real job (shared, tests/system/jobs.py):
the suites under every launcher with OMP_NUM_THREADS unset in the launcher's environment
(auto threads), and two jobs given --threads 2 (torchrun's, which sets
OMP_NUM_THREADS=1 itself, and horovodrun --gloo's). The 4-rank job's case is in the
extended tier: test_threads_extended.py.

    python -m pytest tests/system/test_threads.py -q
"""
from __future__ import annotations

import pytest

from hvd_vs_ddp.common.cores import node_cores
from hvd_vs_ddp.harness.threads import decide
from tests.launch import explain
from tests.system.jobs import DDP_STATS_OFF, SUITES, TIMELINE

pytestmark = pytest.mark.multiproc
CASES = [("single", 1), ("torchrun", 2), ("mpirun", 2), ("horovodrun-gloo", 2),
         ("horovodrun-mpi", 2), ("horovodrun-gloo", 4)]


def _threads(ran) -> dict:
    assert ran.proc.returncode == 0, explain(ran.proc)
    assert "OMP_NUM_THREADS" in ran.job.unset  # what the launcher set, or nothing
    return ran.results()["machine_info"]["hvd_vs_ddp"]["threads"]


def cases(extended: bool) -> list:
    """CASES as parameters: over 2 ranks (extended, as test_suites_launchers' 4-rank job
    is) or not (quick: the jobs test_suites_launchers' quick runs launch)."""
    return [pytest.param(la, n, marks=() if extended else pytest.mark.quick, id=f"{la}-np{n}")
            for la, n in CASES if (n > 2) == extended]


@pytest.mark.parametrize("launcher,n", cases(extended=False))
def test_auto_threads_are_cores_over_local_ranks(jobs, launcher, n):
    auto_threads_are_cores_over_local_ranks(jobs, launcher, n)


def auto_threads_are_cores_over_local_ranks(jobs, launcher: str, n: int) -> None:
    """Every rank of the suites' job under `launcher` at `n` ranks ran node cores / n
    threads (at least 1), decided by the suites themselves."""
    plan = _threads(jobs.get(SUITES[launcher, n]))
    want = max(1, node_cores() // n)
    assert plan["source"] == "auto" and plan["local_ranks"] == n
    assert plan["ranks"] == [want] * n, plan


@pytest.mark.parametrize("job", [DDP_STATS_OFF, TIMELINE["horovodrun-gloo"]],
                         ids=["torchrun", "horovodrun-gloo"])
def test_threads_option_wins_over_the_launcher(jobs, job):
    ran = jobs.get(job)
    assert ran.proc.returncode == 0, explain(ran.proc)
    plan = ran.results()["machine_info"]["hvd_vs_ddp"]["threads"]
    assert plan["source"] == "--threads" and plan["ranks"] == [2, 2], plan


def test_decide_is_bounded_and_overridable():
    assert decide(local_ranks=10 * node_cores()).per_rank == 1
    assert decide(local_ranks=1, requested=3).per_rank == 3
    assert decide(local_ranks=1).per_rank >= 1

"""Every rank gets the same intra-op threads under every launcher (hvd_vs_ddp/harness/threads.py).

torchrun sets OMP_NUM_THREADS=1, horovodrun and mpirun set nothing; before the suites
decided threads themselves, ranks under horovodrun ran one thread per core each (4
ranks on 2 cores: 11x slower). Each case runs the compute-only test on real ranks with
OMP_NUM_THREADS unset in the launcher's environment and reads every rank's actual
torch.get_num_threads() from the results.

    python -m pytest tests/system/test_threads.py -q
"""
from __future__ import annotations

import json

import pytest

from hvd_vs_ddp.harness.threads import decide, node_cores
from tests.launch import explain, launched

pytestmark = pytest.mark.multiproc
ARGV = ["-m", "pytest", "suites/test_throughput.py::test_compute_only", "-q",
        "-p", "no:cacheprovider", "--workloads", "mlp", "--rounds", "1",
        "--steps-per-round", "1", "--warmup-steps", "0"]
CASES = [("single", 1), ("torchrun", 2), ("mpirun", 2), ("horovodrun-gloo", 2),
         ("horovodrun-mpi", 2)]


def _threads(tmp_path, launcher: str, n: int, *extra: str) -> dict:
    out = tmp_path / f"{launcher}.json"
    proc = launched(launcher, n, [*ARGV, *extra, "--benchmark-json", str(out)],
                    timeout=240, unset=("OMP_NUM_THREADS",))
    assert proc.returncode == 0, explain(proc)
    return json.loads(out.read_text())["machine_info"]["hvd_vs_ddp"]["threads"]


@pytest.mark.parametrize("launcher,n", CASES, ids=[f"{la}-np{n}" for la, n in CASES])
def test_auto_threads_are_cores_over_local_ranks(tmp_path, launcher, n):
    plan = _threads(tmp_path, launcher, n)
    want = max(1, node_cores() // n)
    assert plan["source"] == "auto" and plan["local_ranks"] == n
    assert plan["ranks"] == [want] * n, plan


@pytest.mark.parametrize("launcher", ["torchrun", "horovodrun-gloo"])
def test_threads_option_wins_over_the_launcher(tmp_path, launcher):
    plan = _threads(tmp_path, launcher, 2, "--threads", "2")
    assert plan["source"] == "--threads" and plan["ranks"] == [2, 2], plan


def test_decide_is_bounded_and_overridable():
    assert decide(local_ranks=10 * node_cores()).per_rank == 1
    assert decide(local_ranks=1, requested=3).per_rank == 3
    assert decide(local_ranks=1).per_rank >= 1

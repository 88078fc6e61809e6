"""The suites pass under every launcher, running the backends it supports.

Small sizes keep each run short; what is checked is that the collective plugin,
the backends and the JSON work together on real ranks: pytest exits 0, rank 0
wrote one JSON with every kind of result, the backends the launcher can start
actually ran (were not skipped), every convergence result passed the weight check,
and the sharded backends hold what their sharding promises. The jobs are shared
(tests/system/jobs.py SUITES): test_threads and test_why_instrumentation read them too.
The 4-rank job is in the extended tier: test_suites_launchers_extended.py.
"""
from __future__ import annotations

import pytest

from hvd_vs_ddp.common.cores import usable_cores
from tests.launch import explain
from tests.system.jobs import SUITES

pytestmark = pytest.mark.multiproc


CASES = [
    # launcher, ranks, backends that must have run
    ("single", 1, {"single", "dp", "ddp-gloo", "ddp-mpi"}),
    ("torchrun", 2, {"ddp-gloo", "fsdp", "zero"}),
    ("mpirun", 2, {"ddp-gloo", "ddp-mpi"}),
    ("horovodrun-gloo", 2, {"ddp-gloo", "horovod", "zero"}),
    ("horovodrun-mpi", 2, {"ddp-gloo", "ddp-mpi", "horovod"}),
    ("horovodrun-gloo", 4, {"ddp-gloo", "horovod"}),
]


# scripts/test.sh --quick runs one launch per launcher: all but the 4-rank job. The 4-rank
# job (4 ranks oversubscribing 2 cores, about a minute) is in the extended tier
# (test_suites_launchers_extended.py), which .ci/run runs after the test command: the core
# tier keeps every launcher at 2 ranks.
def cases(extended: bool) -> list:
    """CASES as parameters: over 2 ranks (extended) or not (core, and quick)."""
    return [pytest.param(*c, marks=() if extended else pytest.mark.quick, id=f"{c[0]}-np{c[1]}")
            for c in CASES if (c[1] > 2) == extended]


@pytest.mark.parametrize("launcher, ranks, expected", cases(extended=False))
def test_suites_under_launcher(jobs, launcher, ranks, expected):
    suites_pass_under_launcher(jobs, launcher, ranks, expected)


def suites_pass_under_launcher(jobs, launcher: str, ranks: int, expected: set[str]) -> None:
    """The suites' shared job under `launcher` at `ranks`: what the module's docstring says."""
    ran = jobs.get(SUITES[launcher, ranks])  # shared with test_threads, test_why_...
    proc = ran.proc
    assert proc.returncode == 0, explain(proc)
    data = ran.results()
    ran_backends = {b["extra_info"].get("backend") for b in data["benchmarks"]}
    kinds = {b["extra_info"]["kind"] for b in data["benchmarks"]}
    assert expected <= ran_backends, f"expected {expected} to run, ran {ran_backends}\n" \
        f"{explain(proc)}"
    want = {"throughput", "compute_only", "convergence", "time_to_accuracy", "memcpy"}
    if ranks > 1:
        want.add("collective")
    assert want <= kinds, f"missing kinds {want - kinds}"
    info = data["machine_info"]["hvd_vs_ddp"]
    assert info["world_size"] == ranks
    for b in data["benchmarks"]:
        if b["extra_info"]["kind"] == "throughput":
            assert len(b["extra_info"]["rank_step_times"]) == ranks
            assert b["stats"]["rounds"] == 2
            e = b["extra_info"]  # the input pipeline's fields, every rank's own
            assert e["input_mode"] == "device" and e["host_cpu_cores"] > 0
            assert len(e["data_wait_s"]) == len(e["step_times"])
            assert [r["rank"] for r in e["input_pipeline"]["ranks"]] == list(range(ranks))
        if b["extra_info"]["kind"] == "convergence":  # the weight check ran and passed
            assert b["extra_info"]["weights_equal_across_ranks"] is True, b["extra_info"]
            assert b["extra_info"]["weight_rel_dev"] <= b["extra_info"]["weight_tolerance"]
    # Horovod waits its own way unless the ranks outnumber the cores (then it sleeps:
    # hvd_vs_ddp/backends/horovod.py settle()), and says which in its metadata
    crowded = ranks > usable_cores()
    waits = {b["extra_info"]["backend_meta"].get("wait") for b in data["benchmarks"]
             if b["extra_info"].get("backend") == "horovod"
             and b["extra_info"].get("backend_meta")}
    if "horovod" in expected:
        assert waits == {"poll-sleep (ranks outnumber cores)" if crowded else "horovod"}, waits
    if ranks > 1:
        _sharding_shows(data["benchmarks"], expected & {"zero", "fsdp"})
        gan = {b["extra_info"]["backend"] for b in data["benchmarks"]
               if b["extra_info"].get("workload") == "gan"}
        assert expected & {"ddp-gloo", "zero", "horovod"} <= gan, gan  # suites/test_gan.py


def _sharding_shows(benchmarks, must: set[str]) -> None:
    """fsdp holds about 1/N of DDP's parameters on every rank; zero holds DDP's optimizer
    state once across its ranks, each rank within the bound of ZeRO-1's partition."""
    mem = {(b["extra_info"]["backend"], b["extra_info"]["workload"]):
           b["extra_info"]["memory"] for b in benchmarks
           if b["extra_info"]["kind"] == "throughput"}
    checked = set()
    for (backend, workload), m in mem.items():
        ddp = mem.get(("ddp-gloo", workload))
        if ddp is None or backend not in ("zero", "fsdp"):
            continue
        n = len(ddp["param_bytes"])
        key = "optim_state_bytes" if backend == "zero" else "param_bytes"
        full = max(ddp[key])  # DDP: every rank holds all of it
        assert full > 0 and len(m[key]) == n, (backend, key, m, ddp)
        if backend == "fsdp":  # every tensor cut in N (dim-0 chunks, padding: 5%)
            assert abs(sum(m[key]) / sum(ddp[key]) - 1 / n) < 0.05, (backend, key, m, ddp)
            assert max(m[key]) <= full / n + 0.05 * full, (backend, key, m, ddp)
        else:
            # ZeRO-1 gives each parameter's whole state to one rank: all of it exactly once,
            # and its greedy partition (largest tensor first, to the least-loaded rank) is
            # within Graham's list-scheduling bound: full/N + (1 - 1/N) x the largest
            # tensor's state. Derived from the model, and checked to be below `full` (with
            # all the state on one rank the test must fail).
            assert sum(m[key]) == full, (backend, key, m, ddp)
            bound = full / n + (1 - 1 / n) * full * _largest_share(workload)
            assert bound < full, f"{workload}: the bound {bound} cannot fail (full {full})"
            assert max(m[key]) <= bound and min(m[key]) > 0, (backend, key, bound, m, ddp)
        checked.add(backend)
    assert must <= checked, f"{must - checked} not compared with ddp-gloo: {sorted(mem)}"


def _largest_share(workload: str) -> float:
    """The largest parameter's share of all parameters' elements (the optimizer's state
    per parameter is proportional to its elements)."""
    from hvd_vs_ddp.workloads import registry

    sizes = [p.numel() for p in registry.get(workload).build_model(False).parameters()]
    return max(sizes) / sum(sizes)

"""The suites pass under every launcher, running the backends it supports.

Small sizes keep each run short; what is checked is that the collective plugin,
the backends and the JSON work together on real ranks: pytest exits 0, rank 0
wrote one JSON with every kind of result, and the backends the launcher can
start actually ran (were not skipped).
"""
from __future__ import annotations

import json

import pytest

from tests.launch import TINY_SUITE_ARGS as TINY
from tests.launch import explain, horovod_available, launched

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


@pytest.mark.parametrize("launcher, ranks, expected", CASES,
                         ids=[f"{c[0]}-np{c[1]}" for c in CASES])
def test_suites_under_launcher(tmp_path, launcher, ranks, expected):
    if launcher.startswith("horovodrun") or "horovod" in expected:
        ok, why = horovod_available()
        if not ok and launcher.startswith("horovodrun"):
            pytest.skip(f"horovod: {why}")
    out = tmp_path / "results.json"
    proc = launched(launcher, ranks, ["-m", "pytest", "suites/", *TINY,
                                      "--benchmark-json", str(out)], timeout=900)
    assert proc.returncode == 0, explain(proc)
    data = json.loads(out.read_text())
    ran = {b["extra_info"].get("backend") for b in data["benchmarks"]}
    kinds = {b["extra_info"]["kind"] for b in data["benchmarks"]}
    assert expected <= ran, f"expected {expected} to run, ran {ran}\n{explain(proc)}"
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
    if ranks > 1:
        _sharding_shows(data["benchmarks"])
        gan = {b["extra_info"]["backend"] for b in data["benchmarks"]
               if b["extra_info"].get("workload") == "gan"}
        assert expected & {"ddp-gloo", "zero", "horovod"} <= gan, gan  # suites/test_gan.py


def _sharding_shows(benchmarks) -> None:
    """zero holds about 1/N of DDP's optimizer state, fsdp about 1/N of its parameters."""
    mem = {(b["extra_info"]["backend"], b["extra_info"]["workload"]):
           b["extra_info"]["memory"] for b in benchmarks
           if b["extra_info"]["kind"] == "throughput"}
    for (backend, workload), m in mem.items():
        ddp = mem.get(("ddp-gloo", workload))
        if ddp is None or backend not in ("zero", "fsdp"):
            continue
        n = len(ddp["param_bytes"])
        key = "optim_state_bytes" if backend == "zero" else "param_bytes"
        share = sum(m[key]) / sum(ddp[key])
        assert abs(share - 1 / n) < 0.05, (backend, workload, key, m, ddp)
        # fsdp shards every tensor; ZeRO-1 gives each parameter's whole state to one rank,
        # so its busiest rank may hold up to one more tensor's state than an even share
        extra = 0.05 * max(ddp[key]) if backend == "fsdp" else max(ddp[key]) / 2
        assert max(m[key]) <= max(ddp[key]) / n + extra, (backend, key, m, ddp)

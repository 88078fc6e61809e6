"""fsdp and zero on 2 real torchrun ranks, and the spawn launcher, through the suites.

fsdp and zero: convergence against `single` (mlp, gpt) and throughput records whose
per-rank bytes show the sharding: zero's optimizer state and fsdp's parameters about
half of ddp-gloo's at 2 ranks, full copies for ddp-gloo. spawn: ddp-gloo
throughput and convergence at 2 ranks started by torch.multiprocessing.spawn, with a
start-up time per rank. The GAN with toggled accumulation (suites/test_gan.py) under
horovodrun --gloo for ddp-gloo, zero and horovod. About 1 minute on 2 cores.

    python -m pytest tests/system/test_sharded_and_spawn.py -q
"""
from __future__ import annotations

import json

import pytest

from tests.launch import TINY_SUITE_ARGS as TINY
from tests.launch import explain, launched

pytestmark = pytest.mark.multiproc


def _records(path):
    return [b["extra_info"] for b in json.loads(path.read_text())["benchmarks"]]


def test_fsdp_and_zero_converge_and_shard(tmp_path):
    out = tmp_path / "results.json"
    args = [a for a in TINY if a not in ("mlp",)]
    args[args.index("--workloads") + 1:args.index("--workloads") + 1] = ["mlp,gpt"]
    proc = launched("torchrun", 2, ["-m", "pytest", "suites/test_convergence.py",
                                    "suites/test_throughput.py", "-k",
                                    "test_convergence or test_throughput",
                                    "--backends", "fsdp,zero,ddp-gloo", *args,
                                    "--benchmark-json", str(out)], timeout=600)
    assert proc.returncode == 0, explain(proc)
    recs = _records(out)
    conv = {(r["backend"], r["workload"]): r for r in recs if r["kind"] == "convergence"}
    assert {(b, w) for b in ("fsdp", "zero") for w in ("mlp", "gpt")} <= set(conv)
    assert all(r["within_tolerance"] for r in conv.values())
    mem = {(r["backend"], r["workload"]): r["memory"] for r in recs
           if r["kind"] == "throughput"}
    for wl in ("mlp", "gpt"):
        ddp, zero, fsdp = mem["ddp-gloo", wl], mem["zero", wl], mem["fsdp", wl]
        assert len(ddp["param_bytes"]) == 2
        # zero: whole parameters and gradients, about half the optimizer state
        assert zero["param_bytes"] == ddp["param_bytes"]
        share = sum(zero["optim_state_bytes"]) / sum(ddp["optim_state_bytes"])
        assert 0.45 <= share <= 0.55, (wl, zero, ddp)
        assert max(zero["optim_state_bytes"]) < 0.75 * max(ddp["optim_state_bytes"])
        # fsdp: about half of everything (padding of uneven shards aside)
        for key in ("param_bytes", "grad_bytes", "optim_state_bytes"):
            assert max(fsdp[key]) <= 0.55 * max(ddp[key]), (wl, key, fsdp, ddp)


def test_spawn_launcher_runs_throughput_and_convergence(tmp_path):
    out = tmp_path / "results.json"
    proc = launched("spawn", 2, ["-m", "pytest", "suites/test_convergence.py",
                                 "suites/test_throughput.py", "-k",
                                 "test_convergence or test_throughput",
                                 "--backends", "ddp-gloo", *TINY,
                                 "--benchmark-json", str(out)], timeout=300)
    assert proc.returncode == 0, explain(proc)
    recs = _records(out)
    assert {r["launcher"] for r in recs} == {"spawn"}
    tp = [r for r in recs if r["kind"] == "throughput"]
    conv = [r for r in recs if r["kind"] == "convergence"]
    assert tp and conv and all(r["within_tolerance"] for r in conv)
    assert all(r["world_size"] == 2 and len(r["startup_s"]) == 2 for r in tp)
    assert all(0 < s < 120 for r in tp for s in r["startup_s"])


def test_spawn_passes_on_a_failing_rank_exit_status(tmp_path):
    script = tmp_path / "fail_on_rank1.py"
    script.write_text("import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    proc = launched("spawn", 2, [str(script)], timeout=120)
    assert proc.returncode == 3, explain(proc)
    assert "rank 1 exited with 3" in proc.stderr


def test_gan_toggled_accumulation_matches_single(tmp_path):
    from tests.launch import horovod_available
    ok, why = horovod_available()
    if not ok:
        pytest.skip(f"horovod: {why}")
    out = tmp_path / "results.json"
    proc = launched("horovodrun-gloo", 2, ["-m", "pytest", "suites/test_gan.py",
                                           "--backends", "ddp-gloo,zero,horovod", *TINY,
                                           "--benchmark-json", str(out)], timeout=300)
    assert proc.returncode == 0, explain(proc)
    recs = [r for r in _records(out) if r["workload"] == "gan"]
    assert {r["backend"] for r in recs} == {"ddp-gloo", "zero", "horovod"}
    assert all(r["within_tolerance"] and r["world_size"] == 2 for r in recs)

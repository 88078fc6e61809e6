"""The spawn launcher (Lightning's ddp_spawn) through the suites, on 2 real ranks.

ddp-gloo throughput and convergence at 2 ranks started by torch.multiprocessing.spawn,
with a start-up time per rank; a failing rank's exit status reaches the caller. (fsdp,
zero and the GAN suite run under every launcher in tests/system/test_suites_launchers.py,
which also checks that their per-rank bytes show the sharding.) About 25 s on 2 cores.

    python -m pytest tests/system/test_spawn_launcher.py -q
"""
from __future__ import annotations

import json
import time

import pytest

from tests.launch import TINY_SUITE_ARGS as TINY
from tests.launch import explain, launched

pytestmark = pytest.mark.multiproc


def _records(path):
    return [b["extra_info"] for b in json.loads(path.read_text())["benchmarks"]]


@pytest.mark.quick
def test_spawn_launcher_runs_throughput_and_convergence(tmp_path):
    out = tmp_path / "results.json"
    start = time.monotonic()
    proc = launched("spawn", 2, ["-m", "pytest", "suites/test_convergence.py",
                                 "suites/test_throughput.py", "-k",
                                 "test_convergence or test_throughput",
                                 "--backends", "ddp-gloo", *TINY,
                                 "--benchmark-json", str(out)], timeout=300)
    wall = time.monotonic() - start
    assert proc.returncode == 0, explain(proc)
    recs = _records(out)
    assert {r["launcher"] for r in recs} == {"spawn"}
    tp = [r for r in recs if r["kind"] == "throughput"]
    conv = [r for r in recs if r["kind"] == "convergence"]
    assert tp and conv and all(r["within_tolerance"] for r in conv)
    assert all(r["world_size"] == 2 and len(r["startup_s"]) == 2 for r in tp)
    assert all(0 < s < wall for r in tp for s in r["startup_s"]), wall  # within the job


def test_spawn_passes_on_a_failing_rank_exit_status(tmp_path):
    script = tmp_path / "fail_on_rank1.py"
    script.write_text("import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    proc = launched("spawn", 2, [str(script)], timeout=120)
    assert proc.returncode == 3, explain(proc)
    assert "rank 1 exited with 3" in proc.stderr


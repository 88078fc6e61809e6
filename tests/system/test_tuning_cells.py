"""Horovod autotune on real ranks: its log beside the results, then a cell at the
parameters it chose; DDP's fp16 and bf16 hooks train on Gloo CPU, and PowerSGD, which
aborts there now and then (hvd_vs_ddp/backends/ddp.py says why), is skipped with its reason.
The tune preset's compression sets on ResNet-50 (two jobs, about 80 s) are in the extended
tier: test_tuning_cells_extended.py.

    python -m pytest tests/system/test_tuning_cells.py -q
"""
from __future__ import annotations

import pytest

from hvd_vs_ddp.common.horovod_autotune import read
from hvd_vs_ddp.results_schema import load_cell_results
from tests.launch import TINY_SUITE_ARGS, explain, horovod_available, launched

pytestmark = [pytest.mark.multiproc]
SUITE = ["-m", "pytest", "suites/test_throughput.py::test_throughput", *TINY_SUITE_ARGS,
         "--workloads", "mlp", "--rounds", "2", "--steps-per-round", "2"]


@pytest.mark.horovod
def test_autotune_then_autotuned(tmp_path):
    ok, why = horovod_available()
    if not ok:
        pytest.skip(f"horovod: {why}")
    tuned = tmp_path / "tune.json"
    proc = launched("horovodrun-gloo", 2, [*SUITE, "--backends", "horovod", "--knob-set",
                                           "hvd-autotune", "--warmup-steps", "60",
                                           "--benchmark-json", str(tuned)])
    assert proc.returncode == 0, explain(proc)
    log = read(tmp_path / "tune.mlp.horovod-autotune.csv")
    assert log.samples  # Horovod scored parameter samples within the warm-up
    rec = load_cell_results(tuned).benchmarks[0].record
    assert rec.backend_meta["autotune"] and rec.knobs["autotune"]
    out = tmp_path / "at.json"
    proc = launched("horovodrun-gloo", 2, [*SUITE, "--backends", "horovod", "--knob-set",
                                           "hvd-autotuned", "--horovod-autotuned-from",
                                           "tune", "--benchmark-json", str(out)])
    assert proc.returncode == 0, explain(proc)
    meta = load_cell_results(out).benchmarks[0].record.backend_meta
    assert meta["fusion_threshold_bytes"] == int(log.best.fusion_mb * 2**20)
    assert meta["cycle_time_ms"] == pytest.approx(log.best.cycle_time_ms)


def test_ddp_compression_hooks_train_on_gloo(tmp_path):
    out = tmp_path / "ddp.json"
    proc = launched("torchrun", 2, [*SUITE, "-rs", "--backends", "ddp-gloo", "--knob-set",
                                    "tune-all", "--benchmark-json", str(out)])
    assert proc.returncode == 0, explain(proc)
    recs = {b.record.knob_set: b.record for b in load_cell_results(out).benchmarks
            if b.record.KIND == "throughput"}
    assert {"ddp-bf16-hook", "ddp-fp16-hook", "ddp-static-graph", "host-sync"} <= set(recs)
    assert recs["ddp-bf16-hook"].backend_meta["options"]["compression"] == "bf16"
    assert recs["default"].losses != recs["ddp-bf16-hook"].losses  # other maths
    assert not any(k.startswith("ddp-powersgd") for k in recs)
    assert "PowerSGD over Gloo aborts intermittently" in proc.stdout + proc.stderr
    assert not any(k.startswith("hvd-") for k in recs)

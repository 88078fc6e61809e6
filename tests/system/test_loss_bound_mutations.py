"""A loss beyond its bound is a marked measurement; beyond the fault line a failed cell.

Real ranks (one torchrun job, 2 ranks, ddp-gloo on mlp) run the throughput test of DDP's
fp16 and bf16 hooks with this module as a plugin (PYTEST_PLUGINS), which squeezes the
derived bound (hvd_vs_ddp/harness/loss_bound.py) below the deviation each cell really
makes:

  ddp-fp16-hook   the bound below the deviation, the fault line far above: the cell
                  passes, keeps its throughput, and its record says `within` false with
                  the deviation, the bound and the sensitivity; the suite warns
  ddp-bf16-hook   the fault line below it too: the cell fails, saying the deviation, the
                  bound and the fault line

The faults that land beyond the fault line for real are tests/system/test_mutations.py's
(real ranks) and tests/unit/test_loss_bound_derived.py's (emulated).

    python -m pytest tests/system/test_loss_bound_mutations.py -q
"""
from __future__ import annotations

import os

import pytest

from hvd_vs_ddp.results_schema import load_cell_results
from tests.launch import TINY_SUITE_ARGS, explain, launched

pytestmark = [pytest.mark.multiproc]
SQUEEZE_ENV = "HVD_VS_DDP_TEST_LOSS_BOUND"  # set in the ranks only
BEYOND, FAULT = "ddp-fp16-hook", "ddp-bf16-hook"


def pytest_configure(config) -> None:
    """As a plugin of the ranks' pytest: squeeze every derived bound below any deviation,
    and for FAULT the fault line too."""
    if not os.environ.get(SQUEEZE_ENV):
        return
    from hvd_vs_ddp.harness import loss_bound

    derive = loss_bound.derive

    def squeezed(workload, knobs, *args, **kwargs):
        d = derive(workload, knobs, *args, **kwargs)
        return {**d, "bound": 1e-15, "fault_line": 1e-15 if knobs.name == FAULT else 1e9}

    loss_bound.derive = squeezed


def test_beyond_the_bound_a_cell_is_kept_and_marked_beyond_the_fault_line_it_fails(tmp_path):
    """One job, both cells (a launch costs more than the two tiny tests)."""
    out = tmp_path / "cells.json"
    proc = launched("torchrun", 2, [
        "-m", "pytest", "suites/test_throughput.py::test_throughput", *TINY_SUITE_ARGS,
        "-rfEsw", "--backends", "ddp-gloo", "--knob-set", "tune-all", "-k", "fp16 or bf16",
        "--steps-per-round", "2", "--ddp-sample-rate", "0", "--benchmark-json", str(out)],
        extra_env={"PYTEST_PLUGINS": "tests.system.test_loss_bound_mutations",
                   SQUEEZE_ENV: "1"})
    said = proc.stdout + proc.stderr
    failed = "FAILED suites/test_throughput.py::test_throughput[ddp-gloo-mlp-{}]"
    # beyond the bound only: kept, its throughput and its check recorded, marked
    assert failed.format(BEYOND) not in said, explain(proc)
    recs = {b.record.knob_set: b.record for b in load_cell_results(out).benchmarks
            if b.record.KIND == "throughput"}
    rec = recs[BEYOND]
    c = rec.loss_check
    assert c["within"] is False and c["fault"] is False and c["deviation"] > c["bound"]
    assert c["sensitivity"] > 0 and c["probe"] == "fp16" and c["floor"] == 1e-4
    assert rec.samples_per_s_median > 0
    assert "marked beyond its loss bound" in said, explain(proc)
    # beyond the fault line: the cell fails, saying why
    assert proc.returncode != 0 and failed.format(FAULT) in said, explain(proc)
    assert "beyond the set's bound" in said and "beyond its fault line" in said, \
        explain(proc)

"""The loss bound derived from the workload and run, and the faults it still catches.

hvd_vs_ddp/harness/loss_bound.py derives a set's bound as the larger of its floor and
SENSITIVITY_FACTOR x the reference's own sensitivity (the largest per-step loss change one
rounding of its averaged gradients to the probe dtype makes over the last half); beyond
the bound a cell is a marked measurement; past the fault line (the larger of the floor
and FAULT_FACTOR x the derived part) it fails.

Each fault below is a library that breaks the reduction, emulated in one process exactly
as loss_bound emulates the ranks (`single` on the same global batches cut into the ranks'
shards) with the broken step applied to the averaged gradients before every step:

  sum              the ranks' gradients summed, not averaged (world size x the average)
  compress-twice   the average divided by the world size once more, as a library does that
                   applies a pre-dividing compression (DDP's fp16 hook divides before it
                   casts) twice
  dropped-bucket   one bucket never reduced nor written back: the gradients of the
                   parameters in DDP's last bucket (the first layers') are lost

Each must fail the cell (beyond the fault line) on mlp at the tune preset's sizes (2 ranks,
1 warm-up + 3 x 2 timed steps) and at the mutation job's (4 steps), while the exact
fp16 rounding the probe makes stays within. On gpt (Adam) a gradient's scale is invisible
to the update, so a sum or a double division cannot move its loss at all: only the dropped
bucket is caught there (test_on_adam_a_scale_fault_is_invisible_but_a_dropped_bucket_is_not).

    python -m pytest tests/unit/test_loss_bound_derived.py -q
"""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from hvd_vs_ddp.harness import loss_bound
from hvd_vs_ddp.harness.knobs import (
    SENSITIVITY_FACTOR,
    TUNE_ALL,
    by_name,
    loss_deviation,
    loss_sensitivity,
)
from hvd_vs_ddp.workloads import registry

WORLD = 2
TUNE_STEPS = 7      # the tune preset: 1 warm-up step + 3 rounds of 2 (all recorded)
MUTATION_STEPS = 4  # tests/system/test_mutations.py's throughput job: 2 + 1 x 2
MODE = "device"     # the throughput suite's default input mode


def _drop_bucket(step: int, model: torch.nn.Module) -> None:
    """DDP fills buckets in reverse order of the parameters: the last bucket holds the
    first layers'. Here it is the first half of the parameters, lost."""
    params = [p for p in model.parameters() if p.grad is not None]
    with torch.no_grad():
        for p in params[: len(params) // 2]:
            p.grad.zero_()


FAULTS = {"sum": loss_bound.scaled_gradients(WORLD),
          "compress-twice": loss_bound.scaled_gradients(1 / WORLD),
          "dropped-bucket": _drop_bucket}


def _run(name: str, knob_set: str, steps: int, fault: str | None, **params):
    workload = registry.get(name, **params)
    knobs = by_name(knob_set)
    derived = loss_bound.derive(workload, knobs, WORLD, "cpu", steps, MODE)
    if fault is None:
        return derived, None
    losses = loss_bound.single_losses(workload, knobs, WORLD, "cpu", steps, MODE,
                                      on_grads=FAULTS[fault])
    return derived, loss_bound.judge(loss_deviation(losses, derived["reference_losses"]),
                                     derived)


def test_the_bound_is_the_floor_or_a_multiple_of_the_sensitivity():
    def derived(floor: float, sensitivity: float) -> dict:
        return {"floor": floor, "sensitivity": sensitivity,
                **loss_bound.bounds(floor, SENSITIVITY_FACTOR * sensitivity)}

    small = derived(1e-4, 1e-7)  # mlp's fp16 sensitivity: the floor rules
    assert small["bound"] == small["fault_line"] == 1e-4  # as strict as the fixed bound
    assert loss_bound.judge(5e-5, small)["within"]
    assert loss_bound.judge(2e-4, small)["fault"]
    big = derived(1e-4, 0.028)  # resnet50's fp16 sensitivity, measured
    assert big["bound"] == pytest.approx(0.084) and big["fault_line"] == pytest.approx(0.252)
    beyond = loss_bound.judge(0.1, big)
    assert not beyond["within"] and not beyond["fault"]  # a marked measurement
    assert loss_bound.judge(0.3, big)["fault"]           # past 9 x the sensitivity: fails


def test_the_sensitivity_is_never_below_the_probe_runs_own_deviation():
    ref, probe = [3.0, 2.0, 1.5, 1.2], [3.0, 2.0, 1.51, 1.19]
    assert loss_sensitivity(probe, ref) >= loss_deviation(probe, ref)
    assert loss_sensitivity(probe, ref) == pytest.approx(0.01 / 1.35)
    with pytest.raises(ValueError):
        loss_sensitivity([1.0], ref)


def test_every_set_that_changes_the_maths_has_a_probe():
    for k in TUNE_ALL:
        assert (k.probe is not None) == k.changes_maths, k.name
    assert by_name("hvd-fp16").probe == "fp16" and by_name("ddp-bf16-hook").probe == "bf16"
    assert by_name("hvd-adasum").probe == "bf16" and by_name("ddp-powersgd1").probe == "bf16"


def test_the_probe_itself_is_within_its_bound_on_mlp():
    derived, _ = _run("mlp", "ddp-fp16-hook", TUNE_STEPS, None)
    assert derived["floor"] == 1e-4 and derived["probe"] == "fp16"
    assert 0 < derived["sensitivity"] < derived["bound"]
    own = loss_deviation(derived["probe_losses"], derived["reference_losses"])
    assert loss_bound.judge(own, derived)["within"]


@pytest.mark.parametrize("steps", [TUNE_STEPS, MUTATION_STEPS])
@pytest.mark.parametrize("knob_set", ["ddp-fp16-hook", "hvd-fp16"])
def test_a_sum_for_the_average_fails_the_cell(knob_set, steps):
    _, result = _run("mlp", knob_set, steps, "sum")
    assert not result["within"] and result["fault"], loss_bound.describe(result)
    assert "beyond the set's bound" in loss_bound.describe(result)


@pytest.mark.parametrize("steps", [TUNE_STEPS, MUTATION_STEPS])
def test_compressing_twice_fails_the_cell(steps):
    _, result = _run("mlp", "ddp-fp16-hook", steps, "compress-twice")
    assert not result["within"] and result["fault"], loss_bound.describe(result)


def test_a_dropped_bucket_fails_the_cell():
    _, result = _run("mlp", "ddp-fp16-hook", TUNE_STEPS, "dropped-bucket")
    assert not result["within"] and result["fault"], loss_bound.describe(result)


def test_a_dropped_bucket_over_the_mutation_jobs_four_steps_fails_the_cell():
    _, result = _run("mlp", "ddp-fp16-hook", MUTATION_STEPS, "dropped-bucket")
    assert not result["within"] and result["fault"], loss_bound.describe(result)


def test_on_adam_a_scale_fault_is_invisible_but_a_dropped_bucket_is_not():
    """gpt trains with Adam, whose update does not change with the gradient's scale: a
    sum for the average leaves its loss where it was (no loss check can see it; the
    convergence suite's weight check does), while a lost bucket fails the cell."""
    small = {"dim": 32, "layers": 1, "heads": 2, "seq_len": 16, "samples": 256}
    _, summed = _run("gpt", "ddp-fp16-hook", TUNE_STEPS, "sum", **small)
    assert summed["within"], loss_bound.describe(summed)
    _, dropped = _run("gpt", "ddp-fp16-hook", TUNE_STEPS, "dropped-bucket", **small)
    assert dropped["fault"], loss_bound.describe(dropped)


def test_the_report_marks_a_set_beyond_its_derived_bound_and_keeps_its_throughput():
    from hvd_vs_ddp.reports import tuning
    from hvd_vs_ddp.run_model import tuning_pairs

    check = {"bound": 0.085, "floor": 1e-4, "sensitivity": 0.028, "probe": "fp16",
             "factor": SENSITIVITY_FACTOR, "fault_line": 0.256, "deviation": 0.1,
             "within": False, "fault": False, "reference_losses": [1.0, 1.0]}
    row = pd.Series({"knobs": '{"compression": "fp16"}', "losses": [1.0, 1.0],
                     "loss_check": check})
    c = tuning_pairs.loss_check(row, None)
    assert c["ok"] is False and c["sensitivity"] == 0.028 and c["excess"] == 0.1
    assert tuning.mark(c).startswith("BEYOND its bound")
    entry = {"workload": "resnet50", "world_size": 2, "checks": [
        {**c, "knob_set": "hvd-fp16", "series": "horovod (gloo)", "samples_per_s": 12.5}]}
    table = tuning.loss_table([entry])
    row0 = table.df.iloc[0]
    assert (row0["deviation"], row0["bound"]) == ("10%", "8.5%")
    assert row0["single's sensitivity"] == "2.8% (fp16)" and row0["samples/s"] == "12.5"
    assert row0["mark"] == "BEYOND its bound: throughput kept as a measurement"
    line = tuning._maths_line(entry, entry["checks"][0])
    assert "BEYOND" in line and "3 x single's own fp16 sensitivity 2.8%" in line
    ok = tuning_pairs.loss_check(pd.Series({**row, "loss_check": {
        **check, "deviation": 0.02, "within": True}}), None)
    assert tuning.mark(ok) == "within"


def test_adasums_bound_reaches_the_sum_of_the_ranks_gradients():
    """Adasum lies between the ranks' average and their sum by construction: its bound
    takes in the sum's own deviation on the workload (on resnet50 at 2 ranks Adasum
    moved the loss by 105%, as a sum does), and its fault line lies beyond that."""
    derived, _ = _run("mlp", "hvd-adasum", MUTATION_STEPS, None)
    summed = loss_bound.single_losses(registry.get("mlp"), by_name("hvd-adasum"), WORLD,
                                      "cpu", MUTATION_STEPS, MODE,
                                      on_grads=FAULTS["sum"])
    assert derived["envelope"] == loss_sensitivity(summed, derived["reference_losses"])
    assert derived["bound"] >= derived["envelope"] and derived["floor"] == 0.15
    assert loss_bound.judge(loss_deviation(summed, derived["reference_losses"]),
                            derived)["within"]
    assert "envelope" not in _run("mlp", "hvd-fp16", MUTATION_STEPS, None)[0]

"""Per-library tuning knobs, the tune preset's cells and Horovod's autotune log.

    python -m pytest tests/unit/test_tuning.py -q
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.horovod import AUTOTUNE_BUDGET, fusion_conflict, init_env
from hvd_vs_ddp.cli import cell_command, matrix, presets
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.runner import schedule
from hvd_vs_ddp.common.horovod_autotune import AutotuneLogError, parse, read
from hvd_vs_ddp.harness import tuning
from hvd_vs_ddp.harness.knobs import SETS, TUNE, TUNE_ALL, by_name, side_of
from hvd_vs_ddp.harness.options import SuiteOptions
from hvd_vs_ddp.harness.suite_run import SuiteRun

FIXTURE = Path(__file__).parents[1] / "fixtures" / "autotune" / "mlp-np2-gloo.horovod-autotune.csv"
HEADER = ("hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
          "cycle_time_ms,tensor_fusion_threshold,score")


def test_recorded_log_of_horovod_0_28_gives_its_best_scored_sample():
    log = read(FIXTURE)  # horovodrun -np 2 --gloo, mlp, 2000 steps: it had not settled
    assert not log.settled and len(log.samples) == 36
    assert log.best.score == max(s.score for s in log.samples) == 44.3075
    assert (log.best.cycle_time_ms, log.best.fusion_mb) == (1.00366, 25.8769)
    assert {s.hierarchical_allreduce for s in log.samples} == {False, True}


def test_a_settled_log_ends_with_the_best_row_repeated():
    text = "\n".join([HEADER, "0,0,0, 0,5,4,10.5", "0,0,0, 0,50,32,20.25",
                      "0,0,0, 0,25,16,3.0", "0,0,0, 0,50,32,20.25"])
    log = parse(text)
    assert log.settled and len(log.samples) == 3
    assert (log.best.cycle_time_ms, log.best.fusion_mb) == (50.0, 32.0)


@pytest.mark.parametrize("text, why", [
    ("", "empty"), (HEADER, "no scored sample"), ("a,b,c\n1,2,3", "not a Horovod"),
    (HEADER + "\n0,0,0,0,x,4,1", "malformed")])
def test_bad_logs_are_refused_with_a_reason(text, why):
    with pytest.raises(AutotuneLogError, match=why):
        parse(text)


def test_older_horovod_logs_without_torus_and_cache_columns_parse():
    log = parse("hierarchical_allreduce,hierarchical_allgather,cycle_time_ms,"
                "tensor_fusion_threshold,score\n0,0,5,4,7.5\n1,0,10,8,9.5")
    assert log.best.hierarchical_allreduce and log.best.fusion_mb == 8.0


def test_every_knob_is_listed_by_the_module_and_library_sets_name_their_side():
    out = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.harness.knobs"], capture_output=True,
                         text=True, check=True).stdout
    for k in TUNE_ALL:
        assert k.name in out
    assert all(k.name.startswith(("ddp-", "hvd-")) == (k.side != "both") for k in TUNE_ALL)
    assert side_of("ddp-gloo") == "ddp" and side_of("horovod") == "horovod"
    assert by_name("ddp-powersgd4").applies_to("ddp-mpi")
    assert not by_name("ddp-powersgd4").applies_to("horovod")
    assert not by_name("hvd-adasum").applies_to("ddp-gloo")
    assert all(by_name("host-sync").applies_to(b) for b in ("horovod", "ddp-gloo"))


def test_no_knob_set_changes_a_hyperparameter():
    fields = {"precision", "accumulation_steps", "num_workers", "checkpointing",
              "set_to_none", "channels_last"}
    for k in TUNE_ALL:
        assert not fields & set(k.changed()), k.name
        assert k.train_config(3).steps == 3


def test_the_maths_changing_sets_are_marked():
    marked = {k.name for k in TUNE_ALL if k.changes_maths}
    assert marked == {"ddp-fp16-hook", "ddp-bf16-hook", "ddp-powersgd1", "ddp-powersgd4",
                      "hvd-fp16", "hvd-adasum"}


def test_every_set_that_changes_the_maths_states_a_loss_bound():
    from hvd_vs_ddp.harness.knobs import ALL, KnobSet, loss_deviation

    for k in ALL:
        assert (k.loss_bound is not None) == k.changes_maths, k.name
        assert k.loss_bound is None or 0 < k.loss_bound < 0.5, k.name
    with pytest.raises(ValueError, match="loss_bound"):
        KnobSet("x", compression="fp16")          # changes the maths, states no bound
    with pytest.raises(ValueError, match="loss_bound"):
        KnobSet("y", loss_bound=0.1)              # keeps the maths: nothing to bound
    # the mean of the last half (2 of 4 steps) against the reference's
    assert loss_deviation([9.0, 9.0, 1.1, 1.1], [2.0, 2.0, 1.0, 1.0]) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        loss_deviation([1.0], [1.0, 2.0])


def test_options_refuse_bad_values():
    with pytest.raises(ValueError, match="compression"):
        BackendOptions(compression="int8")
    with pytest.raises(ValueError, match="powersgd_rank"):
        BackendOptions(compression="powersgd", powersgd_rank=0)
    with pytest.raises(ValueError, match="cycle_time_ms"):
        BackendOptions(cycle_time_ms=0)


def test_horovod_init_variables(monkeypatch):
    for var in ("HOROVOD_FUSION_THRESHOLD", *AUTOTUNE_BUDGET):
        monkeypatch.delenv(var, raising=False)
    assert init_env(BackendOptions()) == {"HOROVOD_FUSION_THRESHOLD": str(128 * 2**20)}
    env = init_env(by_name("hvd-cycle5ms").backend_options())
    assert env["HOROVOD_CYCLE_TIME"] == "5"
    tuned = init_env(by_name("hvd-autotune").backend_options(autotune_log="/x.csv"))
    # the fusion threshold is left to autotune (a given one would be fixed)
    assert "HOROVOD_FUSION_THRESHOLD" not in tuned
    assert tuned["HOROVOD_AUTOTUNE"] == "1" and tuned["HOROVOD_AUTOTUNE_LOG"] == "/x.csv"
    monkeypatch.setenv("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "7")  # the user's own wins
    assert init_env(BackendOptions(autotune_log="/x.csv"))[
        "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"] == "7"
    assert init_env(BackendOptions(adasum=True)) == init_env(BackendOptions())


def test_a_second_horovod_setting_in_one_process_is_refused(monkeypatch):
    from hvd_vs_ddp.backends import horovod
    monkeypatch.setitem(horovod._STATE, "init", init_env(BackendOptions()))
    assert fusion_conflict(BackendOptions()) is None
    assert "HOROVOD_CYCLE_TIME" in fusion_conflict(BackendOptions(cycle_time_ms=5.0))


def test_tune_preset_cells():
    cells = matrix.cells(presets.preset("tune"))
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids)) and all(c.world_size == 2 for c in cells)
    assert {c.launcher for c in cells} == {"torchrun", "horovodrun-gloo"}
    for c in cells:
        k = by_name(c.knob_set)
        assert k.applies_to(c.backend) and not k.hierarchical
    auto = [c for c in cells if c.knob_set == "hvd-autotuned"]
    assert sorted(c.workload for c in auto) == ["gpt", "resnet50"]
    for c in auto:
        src = f"horovod-horovodrun-gloo-np2-hvd-autotune-{c.workload}"
        assert c.pytest_args == ("--horovod-autotuned-from", src) and src in ids
        assert cell_command.cell_options(c, presets.preset("tune")).workloads == (c.workload,)
    assert Cell.from_dict(auto[0].as_dict()) == auto[0]
    assert {k.name for k in SETS["tune"]} == {k.name for k in TUNE}


def test_autotune_cells_run_once_and_first():
    cells = matrix.cells(presets.preset("tune"))
    order = schedule(cells, 2, seed=3)
    first = [t for t in order if t.endswith(".r1")]
    assert all("hvd-autotune-" in t for t in first[:2])
    assert sum("hvd-autotune-" in t for t in order) == 2  # once: round 1 only
    assert sum("hvd-autotuned-" in t for t in order) == 4


def test_autotuned_reads_the_newest_log_of_its_source(tmp_path):
    config = SuiteRun(options=SuiteOptions(horovod_autotuned_from="src"),
                      plugin=None, results_json=str(tmp_path / "cell.json"))  # type: ignore
    with pytest.raises(pytest.fail.Exception, match="cannot read"):
        tuning.autotune_inputs(config, by_name("hvd-autotuned"), "mlp")
    (tmp_path / "src.r1.mlp.horovod-autotune.csv").write_text(FIXTURE.read_text())
    log, chosen = tuning.autotune_inputs(config, by_name("hvd-autotuned"), "mlp")
    assert log is None and (chosen.fusion_mb, chosen.cycle_time_ms) == (25.8769, 1.00366)
    opts = by_name("hvd-autotuned").backend_options(autotuned=chosen)
    assert (opts.bucket_mb, opts.cycle_time_ms) == (25.8769, 1.00366)
    log, chosen = tuning.autotune_inputs(config, by_name("hvd-autotune"), "mlp")
    assert log == str(tmp_path / "cell.mlp.horovod-autotune.csv") and chosen is None

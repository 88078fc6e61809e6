"""The compile axis without launching anything: declarations, the refusal line, knob sets,
the compile preset's cells, the results fields and their compile statistics.

    python -m pytest tests/unit/test_compile.py -q
"""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from hvd_vs_ddp.backends import compile_support, registry
from hvd_vs_ddp.backends.base import BackendOptions
from hvd_vs_ddp.backends.compile_support import COMPILED_AUTOGRAD, EAGER, INDUCTOR, MODES
from hvd_vs_ddp.cli import matrix, presets
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.harness import compile_stats, knobs
from hvd_vs_ddp.results_schema import ThroughputRecord
from hvd_vs_ddp.results_schema.errors import ResultsError
from hvd_vs_ddp.workloads.loop import TrainConfig

CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="inductor's CPU path needs a C++ compiler")


@pytest.mark.parametrize("name", registry.names())
def test_every_backend_declares_its_compile_modes(name):
    cls = registry.get(name)
    caps = cls.capabilities
    assert EAGER in caps.compile_modes and set(caps.compile_modes) <= set(MODES)
    assert set(caps.compile_refusals) <= set(MODES) - set(caps.compile_modes)
    assert compile_support.refusal(cls, EAGER, BackendOptions()) is None


@needs_cxx
@pytest.mark.parametrize("name", ["single", "ddp-gloo", "horovod", "fsdp", "zero"])
def test_inductor_is_offered_by_every_cpu_backend(name):
    assert compile_support.refusal(registry.get(name), INDUCTOR, BackendOptions(),
                                   cuda=False) is None


def test_horovod_refuses_compiled_autograd_in_one_line():
    line = compile_support.refusal(registry.get("horovod"), COMPILED_AUTOGRAD,
                                   BackendOptions(), cuda=False)
    assert line and "\n" not in line
    assert line.startswith("compile mode compiled-autograd refused: compiled autograd traces "
                           "Horovod's gradient hooks")


@pytest.mark.parametrize("options, mode, words", [
    (BackendOptions(bucket_mb=0.5), INDUCTOR, "below DDP's first bucket"),
    (BackendOptions(compression="fp16"), COMPILED_AUTOGRAD, "comm hook per parameter"),
    (BackendOptions(static_graph=True), COMPILED_AUTOGRAD, "C++ reducer"),
    (BackendOptions(accumulation_steps=2), COMPILED_AUTOGRAD, "no_sync"),
])
def test_ddp_refuses_what_its_compiled_path_cannot_honour(options, mode, words):
    for name in ("ddp-gloo", "zero"):
        line = compile_support.refusal(registry.get(name), mode, options, cuda=False)
        assert line and words in line and "\n" not in line


@needs_cxx
def test_ddp_keeps_its_knobs_where_the_compiled_path_honours_them():
    cls = registry.get("ddp-gloo")
    assert compile_support.refusal(cls, INDUCTOR, BackendOptions(bucket_mb=1.0),
                                   cuda=False) is None
    assert compile_support.refusal(cls, INDUCTOR, BackendOptions(compression="fp16"),
                                   cuda=False) is None


def test_an_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="compile mode must be one of"):
        compile_support.refusal(registry.get("single"), "tensorrt")
    with pytest.raises(ValueError, match="compile must be one of"):
        TrainConfig(compile="tensorrt")
    with pytest.raises(ValueError, match="compile mode must be one of"):
        knobs.KnobSet("x", compile="jit")


def test_compile_knob_sets_go_to_both_sides_and_to_the_loop():
    sets = {k.name: k for k in knobs.SETS["compile-all"]}
    assert [k.compile for k in knobs.SETS["compile"]] == [EAGER, INDUCTOR]
    assert sets["compiled-autograd"].compile == COMPILED_AUTOGRAD
    for k in sets.values():
        assert k.side == "both" and not k.communicates  # single and compute-only run it
        assert k.train_config(steps=3).compile == k.compile
    # eager records look as they did before the compile axis (old runs still match)
    assert "compile" not in knobs.DEFAULT.as_dict()
    assert sets["inductor"].as_dict()["compile"] == INDUCTOR


@needs_cxx
def test_the_compile_preset_cells():
    ids = {c.id for c in matrix.cells(presets.preset("compile"))}
    for n, la in ((1, "single"), (2, "torchrun")):
        assert {f"ddp-gloo-{la}-np{n}", f"ddp-gloo-{la}-np{n}-inductor"} <= ids
    assert {"horovod-single-np1-inductor", "horovod-horovodrun-gloo-np2-inductor",
            "horovod-horovodrun-gloo-np2-inductor-timeline",
            "compute-only-torchrun-np2-inductor"} <= ids
    assert not any("quick" in i or "compiled-autograd" in i for i in ids)
    # the quick preset compiles nothing (its budget has no room for compiles)
    assert all(c.knob_set == "default" for c in matrix.cells(presets.preset("quick")))


@needs_cxx
def test_compile_all_leaves_horovod_out_of_compiled_autograd():
    preset = dataclasses.replace(presets.preset("compile"), knob_set="compile-all")
    ids = {c.id for c in matrix.cells(preset)}
    assert "ddp-gloo-torchrun-np2-compiled-autograd" in ids
    assert not any(i.startswith("horovod") and "compiled-autograd" in i for i in ids)


@needs_cxx
def test_a_backend_asked_for_by_name_that_refuses_every_set_gets_the_line(monkeypatch):
    monkeypatch.setitem(knobs.SETS, "ca-only", (knobs.COMPILE_ALL[2],))
    monkeypatch.setattr(matrix, "SETS", knobs.SETS)
    preset = dataclasses.replace(presets.preset("compile"), knob_set="ca-only")
    with pytest.raises(InputError, match=r"^--backends horovod: knob set compiled-autograd: "
                                         r"compile mode compiled-autograd refused: "):
        matrix.cells(preset, ["horovod"], [2])


def test_short_graph_break_reason():
    msg = ("Unsupported method call\n  Explanation: Dynamo does not know how to trace "
           "method `x` of class `Logger`\n  Hint: Avoid it.\n")
    assert compile_stats.short_reason(msg) == ("Unsupported method call: Dynamo does not "
                                               "know how to trace method `x` of class `Logger`")


def test_merge_takes_the_slowest_rank_and_every_compiling_step():
    rows = [{"warmup_s": [30.0, 0.5, 0.1], "warmup_events": [8, 2, 0], "timed_events": 0,
             "graphs": 1, "graph_breaks": 3, "break_reasons": {"a": 3},
             "ddp_optimizer_buckets": [2]},
            {"warmup_s": [31.0, 0.4, 0.1], "warmup_events": [8, 1, 0], "timed_events": 1,
             "graphs": 1, "graph_breaks": 3, "break_reasons": {"a": 3},
             "ddp_optimizer_buckets": [2]}]
    out = compile_stats.merge(rows, INDUCTOR, "ddp_optimizer", "cold")
    assert out["compile_s"] == pytest.approx(31.5) and out["compile_steps"] == 2
    assert out["recompiles_timed"] == 1 and out["graph_breaks"] == 3
    assert out["compile_info"]["ddp_optimizer_buckets"] == [2]
    assert out["compile_info"]["still_compiling"] is False
    assert compile_stats.merge(rows, EAGER, "", "") == {}
    rec = ThroughputRecord(backend="ddp-gloo", world_size=2, launcher="torchrun",
                           workload="mlp", knobs={"compile": INDUCTOR}, per_rank_batch=4,
                           global_batch=8, step_times=[0.1], samples_per_s=[80.0], **out)
    again = ThroughputRecord.from_dict(rec.to_dict())
    assert again.compile_s == out["compile_s"] and again.compile_info == out["compile_info"]
    row = again.rows()[0]
    assert row["compile_mode"] == INDUCTOR and row["graphs"] == 1.0


def test_compile_info_lengths_are_checked():
    bad = {"warmup_step_s": [1.0, 2.0], "warmup_events": [1]}
    with pytest.raises(ResultsError, match="warmup_events"):
        ThroughputRecord.from_dict({
            "kind": "throughput", "backend": "single", "world_size": 1, "launcher": "single",
            "workload": "mlp", "knobs": {}, "per_rank_batch": 4, "global_batch": 4,
            "step_times": [0.1], "samples_per_s": [40.0], "compile_info": bad})


def test_ddp_over_the_mpi4py_group_refuses_inductor_but_not_compiled_autograd():
    import torch.distributed as dist

    if dist.is_mpi_available():
        pytest.skip("torch's own MPI process group: the mpi4py one is not used")
    cls = registry.get("ddp-mpi")
    line = compile_support.refusal(cls, INDUCTOR, BackendOptions(), cuda=False)
    assert line and "mpi4py process group" in line
    if CXX:
        assert compile_support.refusal(cls, COMPILED_AUTOGRAD, BackendOptions(),
                                       cuda=False) is None

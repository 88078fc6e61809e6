"""Property tests: every record of the results format survives a round trip.

For generated valid JSON objects d of every benchmark kind, CollectiveSize,
MachineInfo, Manifest and CellEntry (unknown extra keys included):
`to_dict(from_dict(d)) == d`, `from_dict(to_dict(x)) == x`, and the same through a
real `json.dumps`/`json.loads`. Hypothesis is derandomized with a small fixed budget,
so the file runs in seconds and always tries the same examples. Torch-free.

    python -m pytest tests/unit/test_results_roundtrip.py -q
"""
from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp import results_schema as results
from hvd_vs_ddp.results_schema import KINDS, LAUNCHERS, OPS, STATUSES

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)

names = st.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=12)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), names)
small_dicts = st.dictionaries(names, scalars, max_size=3)
extras = st.dictionaries(names.map(lambda s: f"x_{s}"), scalars, max_size=2)
seconds = st.floats(0, 1e4, allow_nan=False, allow_infinity=False)
reals = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
counts = st.integers(1, 1024)


def _optional(draw, d: dict, key: str, strategy) -> None:
    if draw(st.booleans()):
        d[key] = draw(strategy)


@st.composite
def common(draw, kind: str) -> dict:
    d = {"kind": kind, "backend": draw(names), "world_size": draw(st.integers(1, 8)),
         "launcher": draw(st.sampled_from(LAUNCHERS))}
    _optional(draw, d, "backend_meta", small_dicts)
    return d


def _series(draw, n: int, strategy=seconds) -> list:
    return draw(st.lists(strategy, min_size=n, max_size=n))


@st.composite
def throughput(draw) -> dict:
    d = draw(common("throughput"))
    n = draw(st.integers(1, 6))
    d.update(workload=draw(names), knobs=draw(small_dicts), per_rank_batch=draw(counts),
             global_batch=draw(counts), step_times=_series(draw, n),
             samples_per_s=_series(draw, n))
    for key, strategy in (("workload_params", small_dicts), ("knob_set", names),
                          ("warmup_steps", st.integers(0, 9)), ("rounds", counts),
                          ("steps_per_round", counts), ("samples_per_s_median", seconds),
                          ("samples_per_s_iqr", st.lists(seconds, min_size=2, max_size=2)),
                          ("losses", st.lists(reals, max_size=4)),
                          ("rank_step_times", st.lists(_row(n), min_size=1, max_size=3)),
                          ("memory", st.fixed_dictionaries(
                              {"max_rss_mb": st.lists(st.one_of(st.none(), seconds), max_size=3),
                               "cuda_max_allocated_mb": st.none()})),
                          ("monitor", st.fixed_dictionaries(
                              {"interval_s": seconds, "ranks": st.lists(st.fixed_dictionaries(
                                  {"rank": st.integers(0, 3), "t": st.lists(seconds, max_size=3),
                                   "gpu_util": st.none()}), max_size=2)})),
                          ("ddp_stats", ddp_stats())):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


@st.composite
def ddp_rank(draw) -> dict:
    n = draw(st.integers(0, 4))
    d = {"rank": draw(st.integers(0, 3)), "iterations": _series(draw, n, st.integers(1, 99))}
    for key in ("forward_compute_s", "backward_compute_s", "backward_comm_s", "overlap_s"):
        d[key] = _series(draw, n)
    for key in ("backward_compute_end_ns", "backward_comm_end_ns"):
        d[key] = _series(draw, n, st.integers(0, 2**62))
    return d


@st.composite
def ddp_stats(draw) -> dict:
    return {"sample_rate": draw(st.integers(0, 100)),
            "bucket_sizes": draw(st.lists(st.integers(0, 2**30), max_size=3)),
            "bucket_cap_bytes": draw(st.integers(0, 2**30)),
            "ranks": draw(st.lists(st.one_of(st.none(), ddp_rank()), max_size=2))}


@st.composite
def horovod_timeline(draw) -> dict:
    d = draw(common("horovod_timeline"))
    n = draw(st.integers(1, 4))
    d.update(workload=draw(names), knobs=draw(small_dicts), per_rank_batch=draw(counts),
             timeline=draw(names), step_times=_series(draw, n),
             rank_step_starts=[_series(draw, n) for _ in range(d["world_size"])],
             rank_step_times=[_series(draw, n) for _ in range(d["world_size"])])
    for key, strategy in (("workload_params", small_dicts), ("knob_set", names),
                          ("global_batch", counts)):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


@st.composite
def compute_only(draw) -> dict:
    d = draw(common("compute_only"))
    n = draw(st.integers(1, 6))
    d.update(workload=draw(names), knobs=draw(small_dicts), per_rank_batch=draw(counts),
             step_times=_series(draw, n))
    for key, strategy in (("workload_params", small_dicts), ("knob_set", names),
                          ("concurrent_ranks", st.integers(1, 8)),
                          ("step_time_median", seconds),
                          ("rank_step_times", st.lists(_row(n), min_size=1, max_size=3))):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


def _row(n: int):
    return st.lists(seconds, min_size=n, max_size=n)


@st.composite
def convergence(draw, kind: str = "convergence") -> dict:
    d = draw(common(kind))
    n = draw(st.integers(1, 6))
    d.update(workload=draw(names), losses=_series(draw, n, reals),
             reference_losses=_series(draw, n, reals), max_rel_dev=draw(seconds),
             tolerance=draw(seconds), within_tolerance=draw(st.booleans()))
    for key, strategy in (("workload_params", small_dicts), ("per_rank_batch", counts),
                          ("global_batch", counts), ("steps", st.integers(0, 99)),
                          ("wall_times", _row(n)), ("reference_wall_times", _row(n))):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


@st.composite
def time_to_accuracy(draw) -> dict:
    d = draw(common("time_to_accuracy"))
    reached = draw(st.booleans())
    d.update(workload=draw(names), target=draw(st.floats(0, 1)), reached=reached,
             seconds=draw(seconds) if reached else None,
             steps=draw(st.integers(0, 999)) if reached else None)
    for key, strategy in (("workload_params", small_dicts), ("global_batch", counts),
                          ("wall_seconds", seconds),
                          ("curve", st.lists(st.lists(seconds, min_size=3, max_size=3),
                                             max_size=4))):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


@st.composite
def size_row(draw) -> dict:
    d = {"bytes": draw(st.integers(0, 2**30)), "times": draw(st.lists(seconds, max_size=4)),
         "busbw_gbps": draw(seconds), "correct": draw(st.booleans())}
    _optional(draw, d, "time_median", seconds)
    _optional(draw, d, "algbw_gbps", seconds)
    d.update(draw(extras))
    return d


@st.composite
def collective(draw) -> dict:
    d = draw(common("collective"))
    d.update(op=draw(st.sampled_from(OPS)), sizes=draw(st.lists(size_row(), min_size=1,
                                                                 max_size=3)))
    _optional(draw, d, "dtype", names)
    d.update(draw(extras))
    return d


@st.composite
def memcpy(draw) -> dict:
    d = draw(common("memcpy"))
    d.update(bytes=draw(st.integers(1, 2**30)), bandwidth_gbps=draw(seconds))
    _optional(draw, d, "device", names)
    _optional(draw, d, "times", st.lists(seconds, max_size=4))
    d.update(draw(extras))
    return d


@st.composite
def recovery(draw) -> dict:
    d = draw(common("recovery"))
    steps = draw(st.integers(2, 500))
    opt_s, opt_step = st.one_of(st.none(), seconds), st.one_of(st.none(), st.integers(0, 500))
    point = st.lists(seconds, min_size=3, max_size=3)
    pair = st.lists(seconds, min_size=2, max_size=2)
    resume = draw(opt_step)
    completed = draw(st.booleans())
    d.update(path=draw(names), library=draw(names), checkpoint=draw(names),
             workload=draw(names), global_batch=draw(counts), steps=steps,
             commit_every=draw(counts), min_world=draw(st.integers(1, 8)),
             hosts=draw(st.lists(names, max_size=2)),
             kill_step=draw(st.integers(1, steps - 1)), completed=completed,
             hang=draw(st.booleans()), leftovers=draw(st.integers(0, 9)),
             world_before=draw(st.one_of(st.none(), st.integers(1, 8))),
             world_after=draw(st.one_of(st.none(), st.integers(1, 8))),
             killed_after_step=draw(opt_step), last_commit_step=draw(opt_step),
             resume_step=resume, steps_lost=None if resume is None else draw(opt_step),
             recovery_s=draw(opt_s), rendezvous_s=draw(opt_s), restore_s=draw(opt_s),
             final_loss=draw(reals) if completed else draw(st.one_of(st.none(), reals)),
             reference_final_loss=draw(reals), final_loss_rel_diff=draw(opt_s),
             weights_rel_diff=draw(opt_s), tolerance=draw(seconds),
             exact_replay=draw(st.booleans()), within_tolerance=draw(st.booleans()),
             commit_s=draw(st.lists(seconds, max_size=3)),
             save_s=draw(st.lists(seconds, max_size=3)),
             step_intervals=draw(st.lists(pair, max_size=3)),
             baseline_step_intervals=draw(st.lists(pair, max_size=3)),
             commit_overhead=draw(st.one_of(st.none(), reals)), commit_share=draw(opt_s),
             timeline=draw(st.lists(point, max_size=3)), kill_t=draw(opt_s),
             recovered_t=draw(opt_s), collective_timeout_s=draw(seconds))
    for key, strategy in (("victim", small_dicts), ("workload_params", small_dicts),
                          ("segments", st.lists(point, max_size=2)), ("sync_s", seconds),
                          ("trial_seconds", seconds),
                          ("returncodes", st.lists(st.one_of(st.none(), st.integers(-9, 9)),
                                                   max_size=2))):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


@st.composite
def machine_info(draw) -> dict:
    d = {"format_version": draw(st.integers(1, results.FORMAT_VERSION))}
    for key, strategy in (("launcher", st.sampled_from(LAUNCHERS)),
                          ("world_size", st.integers(1, 8)), ("versions", small_dicts),
                          ("hardware", small_dicts), ("env", small_dicts)):
        _optional(draw, d, key, strategy)
    d.update(draw(extras))
    return d


text_or_null = st.one_of(st.none(), names)


@st.composite
def cell_entry(draw) -> dict:
    d = {"id": draw(names), "backend": draw(names), "launcher": draw(st.sampled_from(LAUNCHERS)),
         "world_size": draw(st.integers(1, 8)), "suites": draw(st.lists(names, max_size=3)),
         "pytest_args": draw(st.lists(names, max_size=3)), "knob_set": draw(names),
         "status": draw(st.sampled_from(STATUSES)), "error": draw(text_or_null),
         "seconds": draw(st.one_of(st.none(), seconds)), "results": draw(text_or_null),
         "log": draw(text_or_null)}
    _optional(draw, d, "started", names)
    _optional(draw, d, "returncode", st.integers(-9, 255))
    d.update(draw(extras))
    return d


@st.composite
def manifest(draw) -> dict:
    cells = draw(st.lists(cell_entry(), max_size=3, unique_by=lambda c: c["id"]))
    d = {"format": results.FORMAT, "format_version": results.FORMAT_VERSION,
         "command": draw(st.one_of(st.none(), st.lists(names, max_size=3))),
         "preset": draw(text_or_null), "git_commit": draw(text_or_null),
         "started": draw(text_or_null), "finished": draw(text_or_null),
         "complete": draw(st.one_of(st.none(), st.booleans())),
         "versions": draw(st.one_of(st.none(), small_dicts)),
         "hardware": draw(st.one_of(st.none(), small_dicts)),
         "env": draw(st.one_of(st.none(), small_dicts)),
         "workloads": draw(st.one_of(st.none(), st.lists(names, max_size=3))),
         "knob_set": draw(text_or_null), "hosts": draw(text_or_null), "cells": cells}
    _optional(draw, d, "resumed", st.lists(names, max_size=2))
    _optional(draw, d, "interrupted", names)
    d.update(draw(extras))
    return d


STRATEGIES = {"throughput": throughput(), "compute_only": compute_only(),
              "convergence": convergence(), "time_to_accuracy": time_to_accuracy(),
              "gan_convergence": convergence("gan_convergence"),
              "collective": collective(), "memcpy": memcpy(),
              "horovod_timeline": horovod_timeline(), "recovery": recovery()}
OTHERS = {results.CollectiveSize: size_row(), results.MachineInfo: machine_info(),
          results.CellEntry: cell_entry(), results.Manifest: manifest()}


def _round_trips(cls, d: dict) -> None:
    rec = cls.from_dict(d, "generated")
    assert rec.to_dict() == d
    assert cls.from_dict(rec.to_dict()) == rec
    again = json.loads(json.dumps(rec.to_dict()))
    assert cls.from_dict(again) == rec and again == d


def test_every_kind_has_a_strategy():
    assert set(STRATEGIES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_benchmark_records_round_trip(kind):
    @SETTINGS
    @given(STRATEGIES[kind])
    def check(d):
        _round_trips(KINDS[kind], d)
        assert results.record_from_dict(d, "generated") == KINDS[kind].from_dict(d)
    check()


@pytest.mark.parametrize("cls", list(OTHERS), ids=lambda c: c.__name__)
def test_other_records_round_trip(cls):
    @SETTINGS
    @given(OTHERS[cls])
    def check(d):
        _round_trips(cls, d)
    check()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_records_built_by_a_writer_round_trip(kind):
    """A record built with keyword arguments (as the suites do) reads back equal."""
    @SETTINGS
    @given(STRATEGIES[kind])
    def check(d):
        cls = KINDS[kind]
        read = cls.from_dict(d)
        fields = {name: getattr(read, name) for name in cls.field_names()}
        built = cls(**fields, extra=dict(read.extra))
        assert built == read and cls.from_dict(built.to_dict()) == built
    check()

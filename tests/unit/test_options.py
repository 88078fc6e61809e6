"""The suites' options contract (hvd_vs_ddp/harness/options.py): one declaration, both directions.

- every SuiteOptions field is an option of `pytest suites/` (its --help lists it);
- the runner's command line parses back to the same options (Hypothesis round trip);
- the matrix writes every preset cell through it, and the suites read it back;
- bad values are refused up front with one InputError line, not by a cell failing.

    python -m pytest tests/unit/test_options.py -q
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.cli import cell_command, matrix, presets
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.harness import cell_plan, options
from hvd_vs_ddp.harness.option_parsing import parse_argv
from hvd_vs_ddp.harness.options import SuiteOptions, flag_of
from hvd_vs_ddp.workloads import registry as workloads
from tests.launch import ROOT

names = st.lists(st.sampled_from(registry.names()), min_size=1, max_size=3, unique=True)
loads = st.lists(st.sampled_from(workloads.names()), min_size=1, max_size=3, unique=True)


def _value(p) -> st.SearchStrategy:
    """A value its declaration accepts (hvd_vs_ddp/workloads/params.py)."""
    if p.type is bool:
        return st.booleans()
    if p.type is float:
        return st.floats(p.minimum or 0, p.maximum or 1e3, exclude_min=p.above_minimum)
    return st.integers(int(p.minimum or 0), int(min(p.maximum or 512, 512)))


param = st.sampled_from(workloads.names()).flatmap(lambda w: st.sampled_from(
    [p for k, p in workloads.parameters(w).items() if k != "data_dir"]).flatmap(
    lambda p: _value(p).map(lambda v: f"{w}:{p.name}={v}")))
suite_options = st.builds(
    SuiteOptions, backends=names.map(tuple), workloads=loads.map(tuple),
    workload_param=st.lists(param, max_size=2).map(tuple),
    knob_set=st.sampled_from(["default", "full", "bf16", "accum4"]),
    rounds=st.integers(1, 50), steps_per_round=st.integers(1, 9),
    warmup_steps=st.integers(0, 9), convergence_steps=st.integers(2, 90),
    max_bytes=st.integers(4, 2**30), collective_timeout=st.floats(1, 1e4),
    threads=st.integers(0, 64))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(suite_options)
def test_runner_argv_parses_back_to_the_same_options(opts):
    given_, rest = parse_argv(opts.to_argv())
    assert rest == []
    assert SuiteOptions().replace(**given_) == opts


def test_every_option_is_an_option_of_the_suites():
    out = subprocess.run([sys.executable, "-m", "pytest", "suites", "--help",
                          "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120).stdout
    for field in dataclasses.fields(SuiteOptions):
        assert flag_of(field.name) in out, field.name


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
def test_every_preset_cell_writes_options_the_suites_read(preset):
    p = presets.PRESETS[preset]
    for cell in matrix.cells(p, world_sizes=[1, 2]):
        argv = cell_command.pytest_argv(cell, "plan.json", "out.json")
        targets = [a for a in argv if a.startswith("suites/")]
        assert targets and all(any(t.startswith(s.split("::")[0]) for s in options.SUITES.values())
                               for t in targets)
        # the runner's own --benchmark-json (last) is no user's option: parse_argv refuses it
        assert argv[-2:] == ["--benchmark-json", "out.json"]
        # the cell's options travel in its plan (hvd_vs_ddp/harness/cell_plan.py), which the
        # suites read back as the same options
        assert argv[argv.index("--cell-plan") + 1] == "plan.json"
        got = cell_command.cell_options(cell, p)
        assert cell_plan.CellPlan.from_dict(json.loads(json.dumps(
            cell_command.plan(cell, got).to_dict()))).options == got
        assert got.backends == (cell.backend if cell.backend != "compute-only" else "single",)
        timeline = "timeline" in cell.suites
        rounds = min(presets.TIMELINE_ROUNDS, p.options.rounds) if timeline else p.options.rounds
        assert (got.rounds, got.max_bytes) == (rounds, p.options.max_bytes)
        assert got.horovod_timeline == ("auto" if timeline else None)
        assert got.knob_set == cell.knob_set


@pytest.mark.parametrize("bad", [
    "--rounds 0", "--rounds -3", "--rounds x", "--steps-per-round 0", "--warmup-steps -1",
    "--max-bytes 2", "--collective-timeout 0", "--threads -1", "--backends nope",
    "--workloads resnet50,nope", "--knob-set nope", "--workload-param resnet50",
    "--workload-param :=", "--workload-param gpt:image_size=64",
    "--workload-param nope:batch_size=2", "--data-dir /no/such/dir", "'unbalanced", "--rounds",
])
def test_bad_suite_args_are_refused_with_one_line(bad):
    with pytest.raises(InputError) as err:
        parse_argv(bad)
    assert "\n" not in str(err.value) and str(err.value)


def test_other_pytest_arguments_pass_through():
    given_, rest = parse_argv("--rounds 3 -k resnet50 -x")
    assert given_ == {"rounds": 3} and rest == ["-k", "resnet50", "-x"]

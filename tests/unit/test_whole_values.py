"""Names judged whole and values refused in one line, wherever the check lives.

- every check of a user's name matches the whole string: `re.fullmatch`, never `match`
  with a `$` (which matches before a trailing newline: `--name $'nightly\\n'` was a run
  folder with a newline in its name); a source scan keeps it so;
- a Workload's own check (its __post_init__, `validate`) raises InvalidValue, an
  InputError (one line, exit 2) that is still a ValueError, and registry.get runs it
  again on whatever a factory returns (one that changes its Workload after building it);
- a recovery plan that cannot measure a recovery from a commit is refused saying which
  option to change.

    python -m pytest tests/unit/test_whole_values.py -q
"""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.backends.launchers import parse_hosts
from hvd_vs_ddp.cli.matrix import MatrixError, check_name
from hvd_vs_ddp.common.errors import InputError, InvalidValue
from hvd_vs_ddp.recovery.plan import Plan
from hvd_vs_ddp.workloads import external, registry
from tests.launch import ROOT

BROKEN = ROOT / "tests" / "external" / "broken_workloads.py"

# patterns ending in `$` used with .match() that judge no user's value (what they read)
NOT_A_USERS_VALUE = {
    ("hvd_vs_ddp/reports/render.py", "_NUM"),          # a table cell's text, for its CSS class
    ("hvd_vs_ddp/reports/profile_trace.py", "STEP"),   # profiler events' names
    ("hvd_vs_ddp/reports/build.py", "_OURS"),          # figure files the report wrote
}


@pytest.mark.parametrize("bad", ["nightly\n", "nightly\n\n", "a\nb", "\nnightly", "x\r"])
def test_a_run_name_is_judged_whole(bad):
    with pytest.raises(MatrixError, match="run name"):
        check_name(bad)
    assert check_name("nightly.2026-11_27") == "nightly.2026-11_27"


@pytest.mark.parametrize("spec", ["h1\n:2", "h1:2,h2\n:1", "h\n1"])
def test_a_host_is_judged_whole(spec):
    with pytest.raises(InputError, match="not a host name"):
        parse_hosts(spec)


def test_a_slug_is_safe_as_a_whole():
    assert external.slug("mlp") == "mlp"
    assert "\n" not in external.slug("mlp\n")


def _patterns_used_with_match(path: Path) -> list[tuple[str, str]]:
    """(name, pattern) of module-level re.compile(...) whose pattern ends in an unescaped
    `$` and that the module calls .match() on; plus re.match(literal ending in `$`)."""
    tree = ast.parse(path.read_text())
    compiled = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                ast.unparse(node.value.func) == "re.compile" and node.value.args and \
                isinstance(node.value.args[0], ast.Constant) and \
                isinstance(node.targets[0], ast.Name):
            compiled[node.targets[0].id] = str(node.value.args[0].value)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr != "match":
            continue
        owner = ast.unparse(node.func.value)
        if owner in compiled:
            found.append((owner, compiled[owner]))
        elif owner == "re" and node.args and isinstance(node.args[0], ast.Constant):
            found.append(("re.match", str(node.args[0].value)))
    return [(n, p) for n, p in found if re.search(r"(?<!\\)\$\)?$|(?<!\\)\$\|", p)]


def test_no_check_matches_with_a_dollar_anchor():
    """A pattern that ends in `$` used with .match() accepts a trailing newline: a check
    of a user's value uses re.fullmatch (break one back to match-with-$ and this fails)."""
    offenders = []
    for path in sorted((ROOT / "hvd_vs_ddp").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for name, pattern in _patterns_used_with_match(path):
            if (rel, name) not in NOT_A_USERS_VALUE:
                offenders.append(f"{rel}: {name} {pattern!r}")
    assert not offenders, offenders


# -- a workload's own check ------------------------------------------------------------
def _mlp(**changes):
    return registry.get("mlp").with_(**changes)


@pytest.mark.parametrize("changes, words", [
    (dict(batch_size=0), "batch_size must be an integer >= 1, got 0"),
    (dict(batch_size=2.5), "batch_size must be an integer >= 1, got 2.5"),
    (dict(batch_size=True), "batch_size must be an integer"),
    (dict(lr=math.nan), "lr must be a finite number > 0"),
    (dict(lr=0.0), "lr must be a finite number > 0"),
    (dict(momentum=-1.0), "momentum must be a finite number >= 0"),
    (dict(weight_decay=math.inf), "weight_decay must be a finite number >= 0"),
    (dict(optimizer="lbfgs"), "optimizer must be one of"),
    (dict(seed="7"), "seed must be an integer"),
    (dict(loss=None), "loss must be callable"),
])
def test_a_workloads_own_check_is_an_input_error_and_a_value_error(changes, words):
    with pytest.raises(InvalidValue) as err:
        _mlp(**changes)
    assert isinstance(err.value, InputError) and isinstance(err.value, ValueError)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_numpy_numbers_are_numbers():
    assert _mlp(batch_size=np.int64(8), lr=np.float64(0.1), seed=np.int32(3)).batch_size == 8


@pytest.mark.parametrize("factory, words", [
    ("negative_batch", "negative_batch() built a Workload it refuses: batch_size"),
    ("negative_batch_after_build",
     "negative_batch_after_build() returned a Workload it refuses: batch_size"),
])
def test_a_factorys_workload_is_checked_again_in_one_line(factory, words):
    with pytest.raises(InputError) as err:
        registry.get(f"{BROKEN}:{factory}")
    assert words in str(err.value) and "got -4" in str(err.value)
    assert "\n" not in str(err.value)


# -- plans that cannot measure what they claim ----------------------------------------
HVD = dict(path="horovod-elastic", checkpoint="memory", backend="horovod", world_size=2,
           global_batch=96, steps=40)


@pytest.mark.parametrize("change, words", [
    (dict(commit_every=40, kill_step=20), "a commit every 40 steps never comes within the "
     "plan's 40 steps"),
    (dict(commit_every=100, kill_step=39), "choose --recovery-commit-every below 39"),
    (dict(commit_every=10, kill_step=10), "the kill at step 10 comes before the first commit "
     "(after step 10)"),
    (dict(commit_every=10, kill_step=3), "choose --recovery-kill-step above 10"),
])
def test_a_plan_with_no_commit_before_its_kill_is_refused(change, words):
    with pytest.raises(InputError) as err:
        Plan(**{**HVD, **change}).check()
    assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("change", [
    dict(commit_every=10, kill_step=11),                    # one commit before the kill
    dict(commit_every=100, kill_step=None),                 # no kill: a steady state
    dict(checkpoint="none", commit_every=100, kill_step=5),  # no commits, and it says so
])
def test_plans_that_measure_what_they_say_still_pass(change):
    Plan(**{**HVD, **change}).check()


def test_torchft_recovers_per_step_and_needs_no_commit():
    Plan(path="torchft", checkpoint="live", backend="ddp-gloo", world_size=2,
         global_batch=96, steps=40, commit_every=100, kill_step=5).check()

"""Property: no command line makes `hvd-vs-ddp` show a traceback, and a refused one
starts nothing and writes nothing.

Hypothesis builds argument lists for `run`, `report` and `doctor` from the real
option names (read from the CLI's own parser) with odd values: empty strings, blanks,
0, negative, fractional, nan, inf, huge numbers, unicode, unbalanced quotes, option-
like values, commas, real names and paths, and `--suite-args` strings assembled from
the suites' real option names (hvd_vs_ddp/harness/options.py) and pytest's. Each runs in process
(`cli.main`) in a fresh working directory holding a recorded one-cell run; the
runner's `run` and the selftest's `run_check` are tripwires, so a command that would
really start cells or checks stops there instead (and must not have written anything
by then). Every outcome must be one of: exit 2 with exactly one stderr line
"hvd-vs-ddp: error: ..." and an unchanged directory; the tripwire (a valid `run` or
`doctor --selftest`); exit 0 of `doctor` or of a `report` that wrote its files.
A few fixed odd command lines also go through the real command.

    python -m pytest tests/unit/test_property_command_lines.py -q
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hvd_vs_ddp import cli
from hvd_vs_ddp.cli import runner, selftest
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.harness import option_parsing
from tests.bad_inputs import tree_hash
from tests.launch import ROOT

SMALL = ROOT / "tests" / "fixtures" / "runs" / "cpu-small"
ONE_CELL = "ddp-gloo-single-np1"
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


class Started(Exception):
    """The tripwire: the command was valid and would have started cells or checks."""


def _options(command: str) -> list[tuple[str, bool]]:
    """(option string, takes a value) of a subcommand, from the CLI's own parser."""
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for action in sub.choices[command]._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            out += [(o, action.nargs != 0) for o in action.option_strings]
    return out


ODD = st.one_of(
    st.sampled_from(["", " ", "0", "-1", "-2", "1", "2", "1.5", "nan", "inf", "-inf", "1e309",
                     "abc", "'", '"', '"unbalanced', "--", "-x", "--bogus", ",", "1,,2",
                     "ünïcödé", "日本", "\u2010", "a/b", "../x", ".", "..", "x" * 300,
                     "quick", "full", "huge", "single", "ddp-gloo", "horovod", "mlp", "gpt",
                     "1,2", "h1:2", "h1:0", "bad_host:2", "runs/earlier", "afile",
                     "nothing-here", "out/r.html", "r.pdf", "0.05", "0.5"]),
    st.text(max_size=10))
SUITE_FLAGS = [flag for flag, _ in option_parsing._declarations()] + [
    "--test-time-limit", "-k", "-x", "--tb", "-p", "--bogus", "--benchmark-json"]


@st.composite
def suite_args(draw) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(SUITE_FLAGS), ODD), max_size=6))
    text = " ".join(parts)
    if draw(st.booleans()):
        text += draw(st.sampled_from(["'", '"', " \\", ""]))
    return text


@st.composite
def command_line(draw) -> list[str]:
    command = draw(st.sampled_from(["run", "run", "run", "report", "doctor", "bench", ""]))
    if command not in ("run", "report", "doctor"):
        return [command] + draw(st.lists(ODD, max_size=2))
    argv = [command]
    opts = _options(command)
    for opt, takes in draw(st.lists(st.sampled_from(opts), max_size=5)):
        argv.append(opt)
        if takes:
            argv.append(draw(suite_args()) if opt == "--suite-args" else draw(ODD))
    if command == "report":
        argv += draw(st.lists(st.sampled_from(["runs/earlier", "runs/nothing", "afile", "",
                                               "ü"]), max_size=2))
        if draw(st.booleans()):
            argv += ["-o", draw(st.sampled_from(["out/r.html", "runs/earlier/r.html",
                                                 "r.pdf", "", "out/ü.html"]))]
    return argv


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cmd-template")
    run = root / "runs" / "earlier"
    shutil.copytree(SMALL, run)
    man = json.loads((run / "manifest.json").read_text())
    man["cells"] = [c for c in man["cells"] if c["id"] == ONE_CELL]
    (run / "manifest.json").write_text(json.dumps(man, indent=1))
    for f in (run / "cells").glob("*.json"):
        if f.stem != ONE_CELL:
            f.unlink()
    (root / "afile").write_text("a file")
    return root


@pytest.fixture
def tripwires(monkeypatch):
    def started(*args, **kwargs):
        raise Started
    monkeypatch.setattr(runner.Runner, "run", started)
    monkeypatch.setattr(selftest, "run_check", started)


@SETTINGS
@given(command_line())
def test_no_command_line_gives_a_traceback(template, tmp_path_factory, tripwires, monkeypatch,
                                           capsys, argv):
    work = tmp_path_factory.mktemp("cmd")
    shutil.copytree(template, work, dirs_exist_ok=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])
    before = tree_hash(work)
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    except Started:
        event(f"{argv[0]}: valid, tripwire")
        assert argv[0] in ("run", "doctor"), argv
        assert tree_hash(work) == before, f"{argv} wrote files before starting anything"
        return
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    event(f"{argv[0] or '(empty)'}: exit {code}")
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), (argv, err)
        assert tree_hash(work) == before, f"{argv} was refused but changed files"
        return
    assert code == 0, (argv, code, err)
    assert argv[0] in ("doctor", "report"), argv
    if argv[0] == "report":
        written = [Path(p) for p in out.split()]
        assert written and all(p.is_file() for p in written), (argv, out)
        assert tree_hash(work / "runs") == tree_hash(template / "runs")


@pytest.mark.parametrize("argv", [
    ["run", "--suite-args", "--rounds '3", "--runs-dir", "runs"],
    ["run", "--name", "\u00fc/x", "--runs-dir", "runs"],
    ["report", "runs/earlier", "-o", "out/\u00fc.pdf", "--margin", "1e309"],
    ["doctor", "--only", "\u65e5\u672c"],
])
def test_odd_command_lines_through_the_real_command(template, tmp_path, argv):
    shutil.copytree(template, tmp_path, dirs_exist_ok=True)
    before = tree_hash(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", *argv], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("hvd-vs-ddp: error:") and tree_hash(tmp_path) == before

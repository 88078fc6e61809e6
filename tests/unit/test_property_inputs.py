"""Property: whatever a user types, every command ends in exit 2 with one line
or a valid result, never a traceback, and never changes a file that was there before.

Hypothesis builds command lines for `run`, `report`, `project` and `doctor` from the
options of the CLI's own parser, with values that matter for these issues: workload
names and specs (built-in, external files under ext/, broken ones, torchvision names),
`--workload-param` assignments built from each workload's declared parameters
(hvd_vs_ddp/workloads/params.py) with values in and out of their ranges, output paths
that are input files of every kind (a run's manifest and results, another run's report,
verdicts and projection, a Horovod timeline, a user's own file) or fresh ones, and odd
values. Each runs in process (`hvd_vs_ddp.cli.main`) in a fresh copy of the working
directory of tests/bad_inputs.py; the runner and the selftest are tripwires, so nothing
launches. Outcomes allowed:
- exit 2, exactly one stderr line "hvd-vs-ddp: error: ...", the directory unchanged;
- the tripwire (a valid `run` or `doctor --selftest`), the directory unchanged;
- exit 0 of `report`, `project` or `doctor`: every file that was there before has the
  same bytes, and the only new files are the outputs the command printed (and a
  report's figures beside them).
Fixed budget: derandomized, a set number of examples, no deadline.

    python -m pytest tests/unit/test_property_inputs.py -q
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hvd_vs_ddp import cli
from hvd_vs_ddp.cli import runner, selftest
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.workloads import registry
from tests.bad_inputs import workdir

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
INPUT_FILES = ["runs/earlier/manifest.json", "runs/earlier/cells/ddp-gloo-single-np1.json",
               "runs/earlier/logs/ddp-gloo-single-np1.log", "report-tuned/report.html",
               "verdicts-tuned/verdicts.json", "proj/tuned.json",
               "traces/t.horovod-timeline.json", "mine/notes.json", "mine/page.html",
               "runs/tuned/projection.json", "afile", "runs", "ext/broken.py"]
FRESH = ["out/p.json", "out/r.html", "out/ü.html", "new/deeper/x.json", "r.pdf", ""]
ODD = st.sampled_from(["", " ", "0", "-1", "1", "2", "1.5", "nan", "inf", "1e309", "abc",
                       "'", '"', "--", "-x", ",", "1,,2", "ü", "a/b", "..", "x" * 200])
SPECS = ["mlp", "gpt", "resnet50", "digits", "ext/bench.py:make_workload",
         "ext/broken.py:frozen_model", "ext/broken.py:nope", "ext/broken.py:tiny_data",
         "ext/import_error.py:make_workload", "no.such:f", "torchvision:resnet18",
         "torchvision:nope", ":f", "bert"]
# (workload, its declared parameters) for --workload-param
DECLARED = {w: registry.parameters(w) for w in ("mlp", "gpt", "resnet50", "digits")}


class Started(Exception):
    """The tripwire: a valid command would have started cells or checks."""


def _options(command: str) -> list[tuple[str, bool]]:
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [(o, a.nargs != 0) for a in sub.choices[command]._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)
            for o in a.option_strings]


@st.composite
def workload_param(draw) -> str:
    workload = draw(st.sampled_from([*DECLARED, "ext/bench.py:make_workload", "nope"]))
    declared = DECLARED.get(workload, {})
    key = draw(st.sampled_from([*declared, "hidden", "image_size", "bogus"]))
    p = declared.get(key)
    if p is not None and p.type is int and draw(st.booleans()):  # in and around its range
        lo, hi = int(p.minimum or 0), int(min(p.maximum or 64, 64))
        value = str(draw(st.integers(lo - 2, hi + 2)))
    else:
        value = draw(ODD)
    return f"{workload}:{key}={value}"


@st.composite
def suite_args(draw) -> str:
    parts = draw(st.lists(st.one_of(
        workload_param().map(lambda p: f"--workload-param {p}"),
        st.sampled_from(INPUT_FILES + FRESH).map(lambda f: f"--horovod-timeline {f}"),
        st.sampled_from(["--rounds 1", "--workloads mlp", "--junitxml=x.xml", "-k mlp",
                         "--run-dir runs/earlier", f"--workloads {SPECS[5]}"])), max_size=3))
    return " ".join(parts)


def _value(draw, opt: str, command: str) -> str:
    if opt == "--suite-args":
        return draw(suite_args())
    if opt in ("--workloads", "--model"):
        return draw(st.one_of(st.sampled_from(SPECS), ODD))
    if opt in ("-o", "--output"):
        return draw(st.sampled_from(INPUT_FILES + FRESH))
    if opt == "--interconnect":
        return draw(st.one_of(st.sampled_from(["ib-hdr", "roce-100g", "measured", "nvlink4"]),
                              ODD))
    if opt in ("--devices", "--devices-per-node", "--nics-per-node", "--batch-size",
               "--compute-ms", "--draws"):
        return draw(st.one_of(st.sampled_from(["8", "4,8", "2", "97", "20"]), ODD))
    return draw(ODD)


@st.composite
def near_valid(draw) -> list[str]:
    """A report or projection that would run, but for where it writes (and a few valid
    options): the outputs' side of the property."""
    out = draw(st.sampled_from(INPUT_FILES + FRESH[:4] + ["out-own/report.html"]))
    if draw(st.booleans()):
        out = out if out.endswith(".html") else str(Path(out).with_suffix(".html"))
        return ["report", "runs/earlier", "-o", out]
    argv = ["project", "runs/earlier", "--devices", "8", "--interconnect", "ib-hdr",
            "--draws", "40"]
    argv += draw(st.sampled_from([[], ["--workloads", "mlp"], ["--algorithm", "ring"],
                                  ["--devices-per-node", "4"], ["--workloads", "bert"]]))
    return argv + (["-o", out] if draw(st.booleans()) else [])


@st.composite
def command_line(draw) -> list[str]:
    command = draw(st.sampled_from(["run", "run", "report", "project", "project", "doctor",
                                    "near-valid"]))
    if command == "near-valid":
        return draw(near_valid())
    argv = [command]
    if command == "project":
        argv += ["--draws", "40"]  # a drawn --draws comes later and wins
        argv += draw(st.lists(st.sampled_from(["runs/earlier", "runs/no-cells", "runs/tuned",
                                               "runs/nothing", "afile", ""]),
                              min_size=0, max_size=1))
        argv += ["--devices", draw(st.sampled_from(["8", "4,64", "0", ""])),
                 "--interconnect", draw(st.sampled_from(["ib-hdr", "measured", "warp"]))]
    elif command == "report":
        argv += draw(st.lists(st.sampled_from(["runs/earlier", "runs/tuned", "runs/no-cells",
                                               "runs/results-gone", ""]), max_size=2))
    elif command == "run":
        argv += ["--runs-dir", "runs"]
    for opt, takes in draw(st.lists(st.sampled_from(_options(command)), max_size=4)):
        argv.append(opt)
        if takes:
            argv.append(_value(draw, opt, command))
    return argv


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return workdir(tmp_path_factory.mktemp("inputs-template"))


@pytest.fixture
def tripwires(monkeypatch):
    def started(*args, **kwargs):
        raise Started
    monkeypatch.setattr(runner.Runner, "run", started)
    monkeypatch.setattr(selftest, "run_check", started)
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])


@SETTINGS
@given(command_line())
def test_every_command_ends_in_one_line_or_a_valid_result(template, tmp_path_factory,
                                                          tripwires, monkeypatch, capsys,
                                                          argv):
    work = tmp_path_factory.mktemp("inputs")
    shutil.copytree(template, work, dirs_exist_ok=True)
    monkeypatch.chdir(work)
    before = _files(work)
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    except Started:
        event(f"{argv[0]}: valid, tripwire")
        assert argv[0] in ("run", "doctor"), argv
        assert _files(work) == before, f"{argv} wrote files before starting anything"
        return
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    event(f"{argv[0]}: exit {code}")
    after = _files(work)
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), (argv, err)
        assert after == before, f"{argv} was refused but changed files"
        return
    assert code == 0 and argv[0] in ("report", "project", "doctor"), (argv, code, err)
    changed = {f for f in before if after.get(f) != before[f]}
    assert not changed, f"{argv} changed input files: {sorted(changed)}"
    printed = {str(Path(p).resolve().relative_to(work.resolve())) for p in out.split()
               if p.endswith((".html", ".md", ".json")) and Path(p).is_file()}
    new = set(after) - set(before)
    extra = {f for f in new - printed if "_figures/" not in f}
    assert not extra, f"{argv} wrote files it did not name: {sorted(extra)}"

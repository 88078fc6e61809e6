"""Bad input gets one clear line and exit code 2, starts nothing and changes nothing.

The cases (tests/bad_inputs.py, over 170 of them, every option of run, report, project
and doctor, among them workload parameters by their declarations, files to write that
would replace an input, broken external workloads, runs a report cannot use) run in
process through `hvd_vs_ddp.cli.main`, with a tripwire on the runner and the selftest
that fails the test if a cell or check would start; a representative subset also runs
through the real command in a subprocess. Before and after each
case the working directory's tree hash (every path, mode and byte) must be equal.
`python benchmarks/bad_inputs_table.py` runs every case through the real command and
prints the table.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp.cli import runner, selftest
from hvd_vs_ddp.common.log import log
from tests.bad_inputs import CASES, Case, cli_status, tree_hash
from tests.bad_inputs import workdir as make_workdir
from tests.launch import ROOT

# Through the real command too: one per command (run, report, project, doctor) and per
# stage whose real process may print more than Python's own stderr (a library's warning
# at import, a decoder's message on fd 2): argparse, the CLI's own checks, the suites'
# option parsing after torch is imported, the data check (PIL reading broken images),
# a workload built and checked, the loader. Every case also runs in process
# (test_refused_in_process); the cases taken out of this set (the suites' option contract
# by declaration, --horovod-timeline, pytest's parser, --hosts, an unbuildable model) are
# refused by the same code after the same imports as the ones kept. (A refusal that comes
# before any backend is judged or data set read imports no torch and costs ~0.4 CPU-s as a
# process, tests/unit/test_refusal_imports.py; the others ~3 CPU-s.)
SUBPROCESS = {"run --runs-dir runs --backends nccl-typo", "run --runs-dir runs --name ''",
              "run --runs-dir runs --world-sizes -1", "run --runs-dir runs --suite-args "
              "'\"unbalanced'",
              "run --runs-dir runs --data-dir images-broken",
              "run --runs-dir runs --cell-time-limit nan",
              # a factory that changes its Workload after building it
              "run --runs-dir runs --workloads ext/broken.py:negative_batch_after_build",
              "report runs/corrupt -o out/report.html", "doctor --selftest --only nope",
              # a run the report cannot use, a projection over a run's manifest
              "report runs/no-cells -o out/r.html",
              "project runs/earlier --devices 8 --interconnect ib-hdr -o "
              "runs/earlier/manifest.json"}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def snapshot(path: Path) -> dict:
    return {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return make_workdir(tmp_path_factory.mktemp("bad-inputs"))


@pytest.fixture
def workdir(tmp_path):
    return make_workdir(tmp_path)


@pytest.fixture
def tripwire(monkeypatch):
    """A refused command must never reach the runner or the selftest; and the project
    logger writes to this test's captured stderr (configure() binds the stream once)."""
    def started(*args, **kwargs):
        raise AssertionError("a refused command started cells or selftest checks")
    monkeypatch.setattr(runner.Runner, "run", started)
    monkeypatch.setattr(selftest, "run_check", started)
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])


def assert_one_line_exit_2(code, err: str, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, (code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), err
    for w in words:
        assert w in lines[0], lines[0]


def _skip_with_gpus(case: Case) -> None:
    if case.skip_with_gpus:
        import torch
        if torch.cuda.device_count() >= 2:
            pytest.skip("this machine has the GPUs")


def test_there_are_at_least_60_distinct_cases():
    assert len({c.argv for c in CASES}) == len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_refused_in_process(shared, case, tripwire, monkeypatch, capsys):
    _skip_with_gpus(case)
    monkeypatch.chdir(shared)
    before = tree_hash(shared)
    code = cli_status(case.argv)
    out, err = capsys.readouterr()
    assert_one_line_exit_2(code, err, *case.words)
    assert out == ""
    assert tree_hash(shared) == before


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SUBPROCESS],
                         ids=[c.id for c in CASES if c.id in SUBPROCESS])
def test_refused_by_the_real_command(workdir, case):
    _skip_with_gpus(case)
    before = tree_hash(workdir)
    proc = cli(*case.argv, cwd=workdir)
    assert_one_line_exit_2(proc.returncode, proc.stderr, *case.words)
    assert proc.stdout == "" and tree_hash(workdir) == before


def test_every_subprocess_case_exists():
    assert SUBPROCESS <= {c.id for c in CASES}


def _mutate_results(run: Path, how: str) -> None:
    f = next((run / "cells").glob("*.json"))
    text = f.read_text()
    if how == "empty":
        f.write_text("")
    elif how == "truncated":
        f.write_text(text[: len(text) // 2])
    elif how == "not-json":
        f.write_text("hello, world")
    elif how == "other-tool":
        f.write_text(json.dumps({"tool": "something else", "results": []}))
    elif how == "newer-format":
        data = json.loads(text)
        data["machine_info"]["hvd_vs_ddp"]["format_version"] = 99
        f.write_text(json.dumps(data))


@pytest.mark.parametrize("how", ["empty", "truncated", "not-json", "other-tool", "newer-format"])
def test_report_lists_bad_results_as_unreadable(workdir, how, tripwire, monkeypatch, capsys):
    """One bad cell file: the report is still written (exit 3), the cell listed as
    unreadable with one warning line; the run directory is untouched. One kind through
    the real command, the others in process (the same main(), seconds of imports less)."""
    run = workdir / "runs" / "earlier"
    _mutate_results(run, how)
    before = snapshot(workdir / "runs")
    argv = ["report", "runs/earlier", "-o", "out/report.html"]
    if how == "not-json":
        proc = cli(*argv, cwd=workdir)
        code, err = proc.returncode, proc.stderr
    else:
        monkeypatch.chdir(workdir)
        code = cli_status(argv)
        err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 3, err[-2000:]
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: warning: unreadable"), lines
    assert (workdir / "out" / "report.html").is_file()
    assert snapshot(workdir / "runs") == before


def test_suites_refuse_unknown_backend(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "suites/", "--backends", "hvd",
                           "-p", "no:cacheprovider", "-q"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 4 and "unknown backend 'hvd'" in proc.stdout + proc.stderr


@pytest.mark.parametrize("given", ["no-such-dir", "not-a-run"])
def test_report_refuses_a_non_run_before_loading_the_plotting_stack(tmp_path, given):
    """`report` on a path that is no run: one line, exit 2, and none of the report's heavy
    libraries imported (the refusal came first, in a fraction of a second)."""
    (tmp_path / "not-a-run").mkdir()
    code = ("import sys; from hvd_vs_ddp.cli.app import main; "
            f"rc = main(['report', {given!r}, '-o', 'out/r.html']); "
            "print(rc, sorted(m for m in ('pandas', 'seaborn', 'matplotlib', 'scipy') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.split("\n")[0] == "2 []", proc.stdout + proc.stderr
    assert_one_line_exit_2(2, proc.stderr, given)
    assert not (tmp_path / "out").exists()

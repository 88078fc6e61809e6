"""Outputs never overwrite inputs: every command's output tried over every kind
of input file, each refused with one line and exit 2, the input intact.

The inputs (a working directory built once): a run (its manifest, a cell's results, a
cell's log, a Horovod timeline and a profiler trace in its cells/), the report of
another run (HTML, Markdown, verdicts.json, a figure), a projection of another run, a
Horovod timeline and a profiler trace outside any run, and a user's own files (JSON,
HTML, Markdown with no marker). The outputs: `report -o` (its HTML, its Markdown and
its verdicts.json beside it), `project -o FILE`, `project RUN` (RUN/projection.json),
`run --suite-args "--horovod-timeline FILE"`, and the suites' `--benchmark-json`. Each
case runs in process through `hvd_vs_ddp.cli.main` with the runner and the selftest as
tripwires; the tree hash of the whole working directory (every path, mode and byte) is
the same before and after. Controls: a report and a projection replace their own
earlier selves; the rules of hvd_vs_ddp/common/outputs.py one by one.

    python -m pytest tests/unit/test_output_gate.py -q
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp.cli import main, runner, selftest
from hvd_vs_ddp.common import output_formats, outputs
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.common.outputs import Output
from tests.bad_inputs import cli_status, tree_hash
from tests.launch import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
ONE_CELL = "ddp-gloo-single-np1"
PROJECT = ["--devices", "4", "--interconnect", "ib-hdr", "--draws", "40"]

# kind of input file -> where it lies in the working directory
INPUTS = {
    "a run's manifest": "runs/earlier/manifest.json",
    "a cell's results": f"runs/earlier/cells/{ONE_CELL}.json",
    "a cell's log": f"runs/earlier/logs/{ONE_CELL}.log",
    "a run's Horovod timeline": "runs/earlier/cells/x.horovod-timeline.json",
    "a run's profiler trace": "runs/earlier/cells/x.rank0.profile.json",
    "the HTML report of another run": "out-other/report.html",
    "the Markdown report of another run": "out-other/report.md",
    "the verdicts.json of another run": "out-other/verdicts.json",
    "a figure of another report": "out-other/report_figures/throughput.png",
    "a projection of another run": "proj/other.json",
    "a Horovod timeline": "traces/t.horovod-timeline.json",
    "a profiler trace": "traces/p.profile.json",
    "a user's JSON": "mine/notes.json",
    "a user's HTML": "mine/page.html",
    "a user's Markdown": "mine/notes.md",
    "an empty file": "mine/empty.json",
}


def _cli(argv: list[str]) -> tuple[int | str | None, str]:
    return cli_status(argv), ""


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    small = FIXTURES / "runs" / "cpu-small"
    shutil.copytree(small, root / "runs" / "earlier")
    shutil.copytree(small, root / "runs" / "other")
    why = FIXTURES / "runs" / "cpu-why" / "cells"
    timeline = next(why.glob("*.horovod-timeline.json"))
    trace = FIXTURES / "profile" / "ddp-gloo.rank0.profile.json"
    shutil.copy(timeline, root / INPUTS["a run's Horovod timeline"])
    shutil.copy(trace, root / INPUTS["a run's profiler trace"])
    (root / "traces").mkdir()
    shutil.copy(timeline, root / INPUTS["a Horovod timeline"])
    shutil.copy(trace, root / INPUTS["a profiler trace"])
    (root / "mine").mkdir()
    (root / INPUTS["a user's JSON"]).write_text('{"mine": true}')
    (root / INPUTS["a user's HTML"]).write_text("<!DOCTYPE html><p>my page</p>")
    (root / INPUTS["a user's Markdown"]).write_text("# my notes\n")
    (root / INPUTS["an empty file"]).write_text("")
    cwd = Path.cwd()
    os.chdir(root)
    try:  # the report and the projection of another run, written by the commands
        assert main(["report", "runs/other", "-o", "out-other/report.html"]) == 0
        assert main(["project", "runs/other", *PROJECT, "-o", "proj/other.json"]) == 0
    finally:
        os.chdir(cwd)
    for rel in INPUTS.values():
        assert (root / rel).is_file(), rel
    return root


@pytest.fixture
def gate(work, monkeypatch, capsys):
    """In the working directory, tripwires armed; returns a function that runs argv and
    asserts: exit 2, one line 'hvd-vs-ddp: error: ...', nothing changed anywhere."""
    def started(*args, **kwargs):
        raise AssertionError("a refused command started cells or checks")
    monkeypatch.setattr(runner.Runner, "run", started)
    monkeypatch.setattr(selftest, "run_check", started)
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])
    monkeypatch.chdir(work)

    def refused(argv: list[str], *words: str) -> str:
        before = tree_hash(work)
        capsys.readouterr()
        code, _ = _cli(argv)
        out, err = capsys.readouterr()
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2, (argv, code, err[-2000:])
        assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), err
        for w in words:
            assert w in lines[0], lines[0]
        assert tree_hash(work) == before, f"{argv} changed files"
        return lines[0]
    return refused


def _place(work: Path, kind: str, name: str, tag: str) -> Path:
    """A copy of the input of `kind` where a command writes `name`, in a fresh folder."""
    folder = work / "placed" / f"{tag}-{abs(hash(kind)) % 10**8}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(work / INPUTS[kind], folder / name)
    return folder


# -- every command's output over every kind of input --------------------------------
@pytest.mark.parametrize("kind", INPUTS)
@pytest.mark.parametrize("name", ["report.html", "report.md", "verdicts.json"])
def test_report_never_writes_over_an_input(gate, work, kind, name):
    folder = _place(work, kind, name, name.replace(".", "-"))
    gate(["report", "runs/earlier", "-o", str(folder / "report.html")], "exists and is")


@pytest.mark.parametrize("kind", [k for k in INPUTS if INPUTS[k].endswith(".html")] +
                         ["a run's manifest", "a cell's results"])
def test_report_never_writes_into_a_run(gate, work, kind):
    rel = Path(INPUTS[kind])
    target = rel.with_suffix(".html") if rel.suffix != ".html" else rel
    if target.parts[0] != "runs":
        target = Path("runs/earlier/cells") / target.name
    gate(["report", "runs/other", "-o", str(target)], "inside")


@pytest.mark.parametrize("kind", [k for k in INPUTS if k != "a projection of another run"])
def test_project_never_writes_over_an_input(gate, kind):
    gate(["project", "runs/earlier", *PROJECT, "-o", INPUTS[kind]], INPUTS[kind])


def test_project_never_writes_a_projection_of_one_run_over_another(gate):
    gate(["project", "runs/earlier", *PROJECT, "-o", INPUTS["a projection of another run"]],
         "a projection of", "runs/other, not of")


@pytest.mark.parametrize("kind", [k for k in INPUTS if "projection" not in k])
def test_project_never_replaces_a_runs_projection_file_that_is_something_else(
        gate, work, kind):
    run = work / "runs" / "earlier"
    target = run / "projection.json"
    shutil.copy(work / INPUTS[kind], target)
    try:
        gate(["project", "runs/earlier", *PROJECT], "projection.json")
    finally:
        target.unlink()


def test_project_never_writes_into_another_runs_projection_file(gate):
    gate(["project", "runs/earlier", *PROJECT, "-o", "runs/other/projection.json"],
         "projection file of run", "may hold only a projection of that run")


@pytest.mark.parametrize("kind", [k for k in INPUTS if "Horovod timeline" not in k or
                                  k.startswith("a run's")])
def test_run_never_writes_a_timeline_over_an_input(gate, kind):
    gate(["run", "--runs-dir", "runs", f"--suite-args=--horovod-timeline {INPUTS[kind]}"],
         "--horovod-timeline")


@pytest.mark.parametrize("flag", ["--junitxml", "--log-file", "--basetemp", "--debug",
                                  "--benchmark-json", "--benchmark-save"])
def test_run_refuses_pytests_own_writers(gate, flag):
    target = INPUTS["a run's manifest"]
    gate(["run", "--runs-dir", "runs", f"--suite-args={flag}={target}"], flag)


def test_run_never_writes_over_an_existing_run_or_file(gate):
    gate(["run", "--runs-dir", "runs", "--name", "earlier"], "already exists")
    gate(["run", "--runs-dir", INPUTS["a user's JSON"]], "not a directory")


def test_the_suites_never_write_results_over_a_manifest(work):
    before = tree_hash(work)
    proc = subprocess.run([sys.executable, "-m", "pytest", "suites/test_collectives.py",
                           "-p", "no:cacheprovider", "-q", "--backends", "single",
                           "--benchmark-json", str(work / INPUTS["a run's manifest"])],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "--benchmark-json" in proc.stderr and "inside the run directory" in proc.stderr
    assert tree_hash(work) == before


# -- controls: an output replaces its own earlier self --------------------------------
def test_a_report_and_a_projection_replace_their_own_earlier_selves(work, monkeypatch):
    monkeypatch.chdir(work)
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])
    for _ in range(2):
        assert main(["report", "runs/other", "-o", "out-other/report.html"]) == 0
        assert main(["project", "runs/other", *PROJECT, "-o", "proj/other.json"]) == 0
    assert main(["project", "runs/earlier", *PROJECT]) == 0  # its own projection.json
    assert main(["project", "runs/earlier", *PROJECT]) == 0
    (work / "runs" / "earlier" / "projection.json").unlink()


# -- the rules, one by one ----------------------------------------------------------------
def test_identify_reads_every_kind_from_the_file_itself(work):
    want = {"a run's manifest": output_formats.RUN_MANIFEST,
            "a cell's results": output_formats.CELL_RESULTS,
            "a run's Horovod timeline": output_formats.HOROVOD_TIMELINE,
            "a run's profiler trace": output_formats.PROFILER_TRACE,
            "the HTML report of another run": output_formats.REPORT_HTML,
            "the Markdown report of another run": output_formats.REPORT_MD,
            "the verdicts.json of another run": output_formats.VERDICTS,
            "a figure of another report": output_formats.FIGURE,
            "a projection of another run": output_formats.PROJECTION}
    for kind, mark in want.items():
        got = output_formats.identify(work / INPUTS[kind])
        assert got is not None and got.kind == mark, (kind, got)
    other = str((work / "runs" / "other").resolve())
    assert output_formats.identify(
        work / INPUTS["the HTML report of another run"]).inputs == (other,)
    for kind in ("a cell's log", "a user's JSON", "a user's HTML", "a user's Markdown",
                 "an empty file"):
        assert output_formats.identify(work / INPUTS[kind]) is None, kind


def test_a_truncated_manifest_still_marks_its_run(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs" / "cpu-small", run)
    text = (run / "manifest.json").read_text()
    (run / "manifest.json").write_text(text[:300])
    assert outputs.enclosing_run(run / "cells" / "x.json") == run.resolve()
    with pytest.raises(outputs.OutputRefused, match="inside the run directory"):
        outputs.check_one(Output(tmp_path / "run" / "x.json", output_formats.PROJECTION, ("a",)))


def test_the_run_itself_may_write_its_own_files_only(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs" / "cpu-small", run)
    manifest, results = run / "manifest.json", run / "cells" / f"{ONE_CELL}.json"
    for out in (Output(manifest, output_formats.RUN_MANIFEST),
                Output(results, output_formats.CELL_RESULTS),
                Output(run / "logs" / f"{ONE_CELL}.log", output_formats.CELL_LOG),
                Output(run / "cells" / "new.json", output_formats.CELL_RESULTS)):
        outputs.check_one(out, owner=run)  # its own: allowed
        with pytest.raises(outputs.OutputRefused, match="inside the run directory"):
            outputs.check_one(out)  # anyone else: refused
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(outputs.OutputRefused):  # another run's owner is no owner here
        outputs.check_one(Output(results, output_formats.CELL_RESULTS), owner=other)
    timeline = run / "cells" / "x.horovod-timeline.json"
    shutil.copy(next((FIXTURES / "runs" / "cpu-why" / "cells").glob("*.horovod-timeline.json")),
                timeline)
    with pytest.raises(outputs.OutputRefused, match="a Horovod timeline, not a cell's results"):
        outputs.check_one(Output(timeline, output_formats.CELL_RESULTS), owner=run)
    with pytest.raises(outputs.OutputRefused):  # the manifest only at the top
        outputs.check_one(Output(run / "cells" / "manifest.json", output_formats.RUN_MANIFEST),
                          owner=run)


def test_a_writer_must_mark_what_it_writes(tmp_path):
    with pytest.raises(ValueError, match="does not carry its marker"):
        outputs.write_files({Output(tmp_path / "r.html", output_formats.REPORT_HTML): b"<p>x</p>"})
    assert not list(tmp_path.iterdir())


def test_folders_that_cannot_hold_the_output(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(outputs.OutputRefused, match="is a file, not a folder"):
        outputs.check_one(Output(tmp_path / "afile" / "sub" / "p.json", output_formats.PROJECTION))
    with pytest.raises(outputs.OutputRefused, match="is a directory"):
        outputs.check_one(Output(tmp_path, output_formats.PROJECTION))

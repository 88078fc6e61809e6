"""`hvd-vs-ddp run --repeat 2` for real: each repetition its own process and files, in
the recorded interleaved order; the report reads both repetitions. Then the real resume
of a damaged run: every repetition's files are recorded with their digests, and a
truncated results file makes `run --resume` (the real command, for its stderr) re-run
that repetition alone, saying so in one line, keeping the damaged file under damaged/
and no other file changed. (A damaged repetition is marked pending and takes the path of
an unfinished one: hvd_vs_ddp/cli/resume_check.py.) Real processes because the
recording is the runner's, after the cell's ranks ended.

    python -m pytest tests/system/test_repeat_run.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.harness import pace
from hvd_vs_ddp.reports import build_report
from hvd_vs_ddp.results_schema import integrity, load_manifest
from tests.launch import ROOT, TINY_RUN_SUITE_ARGS

pytestmark = pytest.mark.multiproc


def test_repeat_resume_and_report(tmp_path, monkeypatch):
    # the one system test whose ranks time the pace probe (tests/system/conftest.py)
    monkeypatch.setenv(pace.SWITCH, "on")
    runs = tmp_path / "runs"
    args = ["run", "--backends", "ddp-gloo", "--world-sizes", "2", "--workloads", "mlp",
            "--runs-dir", str(runs), "--name", "rep", "--repeat", "2", "--order-seed", "3",
            # what repetitions and resume are about: a full first repetition (convergence
            # beside the timing) and timing-only later ones; not the collectives, the GAN
            # or the compute-only twin (one cell: the order of several cells, round-robin
            # by repetition, is tests/unit/test_repeat.py's)
            "--suites", "throughput,convergence", "--suite-args", TINY_RUN_SUITE_ARGS]
    assert cli(args) == 0
    run = runs / "rep"
    man = json.loads((run / "manifest.json").read_text())
    assert (man["repeat"], man["order_seed"]) == (2, 3) and len(man["order"]) == 2
    assert [t.rsplit(".r", 1)[1] for t in man["order"]] == ["1", "2"]
    for c in man["cells"]:
        assert c["status"] == "passed" and [r["rep"] for r in c["repeats"]] == [1, 2]
        for r in c["repeats"]:
            assert (run / r["results"]).is_file() and (run / r["log"]).is_file()
            assert r["results"] == f"cells/{c['id']}.r{r['rep']}.json"
    ddp = next(c for c in man["cells"] if c["backend"] == "ddp-gloo")
    kinds = [{b["extra_info"]["kind"] for b in json.loads(
        (run / r["results"]).read_text())["benchmarks"]} for r in ddp["repeats"]]
    assert "convergence" in kinds[0] and kinds[1] == {"throughput"}  # r2: timing only
    # every timed record of every repetition carries each rank's pace probe
    for r in ddp["repeats"]:
        for b in json.loads((run / r["results"]).read_text())["benchmarks"]:
            info = b["extra_info"]
            if info["kind"] in ("throughput", "compute_only"):
                ranks = info["pace_probe"]["ranks"]
                assert len(ranks) == info["world_size"] == 2, info["pace_probe"]
                assert all(k["pre"] > 0 and len(k["post"]) == pace.POST_PROBES
                           and min(k["post"]) > 0 for k in ranks), ranks

    doc = json.loads(build_report([run], tmp_path / "out" / "report.html")
                     .verdicts.read_text())
    assert doc["runs"][0]["repeat"] == 2
    assert doc["answers"][0]["fastest"]["repetitions"] == 2

    # a damaged results file: the real resume re-runs that repetition alone, in one line
    again = json.loads((run / "manifest.json").read_text())
    for c in again["cells"]:
        for r in c["repeats"]:
            assert r["files"][r["results"]]["size"] == (run / r["results"]).stat().st_size
            assert r["log"] in r["files"]
    rel = next(c for c in again["cells"] if c["id"] == ddp["id"])["repeats"][1]["results"]
    target = run / rel
    whole = target.read_bytes()
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    target.write_bytes(whole[:100])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--resume",
                           str(run)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [ln for ln in proc.stderr.splitlines() if "re-running" in ln]
    assert len(said) == 1 and f"{rel}: truncated (100 of {len(whole):,} bytes)" in said[0]
    assert "run finished: 1 passed, 0 failed" in proc.stderr
    assert {b["extra_info"]["kind"] for b in json.loads(target.read_text())["benchmarks"]} \
        == {"throughput"}  # the second repetition again, timing only
    man, _ = load_manifest(run)
    assert integrity.check_run(run, man) == {} and not integrity.legacy(man)
    [kept] = (run / "damaged").rglob(target.name)
    assert kept.read_bytes() == whole[:100]
    rerun_log = run / next(c for c in again["cells"]
                           if c["id"] == ddp["id"])["repeats"][1]["log"]
    for p, data in before.items():
        if p not in (target, run / "manifest.json", rerun_log):
            assert p.read_bytes() == data, p

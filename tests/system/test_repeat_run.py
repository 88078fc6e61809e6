"""`hvd-vs-ddp run --repeat 2` for real: each repetition its own process and files, in
the recorded interleaved order; `--resume` reruns only a repetition that did not pass;
the report reads both repetitions.

    python -m pytest tests/system/test_repeat_run.py
"""
from __future__ import annotations

import json

import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.reports import build_report
from tests.launch import TINY_RUN_SUITE_ARGS

pytestmark = pytest.mark.multiproc


def test_repeat_resume_and_report(tmp_path):
    runs = tmp_path / "runs"
    args = ["run", "--backends", "ddp-gloo", "--world-sizes", "2", "--workloads", "mlp",
            "--runs-dir", str(runs), "--name", "rep", "--repeat", "2", "--order-seed", "3",
            "--suite-args", TINY_RUN_SUITE_ARGS]
    assert cli(args) == 0
    run = runs / "rep"
    man = json.loads((run / "manifest.json").read_text())
    assert (man["repeat"], man["order_seed"]) == (2, 3) and len(man["order"]) == 4
    assert [t.rsplit(".r", 1)[1] for t in man["order"]] == ["1", "1", "2", "2"]
    for c in man["cells"]:
        assert c["status"] == "passed" and [r["rep"] for r in c["repeats"]] == [1, 2]
        for r in c["repeats"]:
            assert (run / r["results"]).is_file() and (run / r["log"]).is_file()
            assert r["results"] == f"cells/{c['id']}.r{r['rep']}.json"
    ddp = next(c for c in man["cells"] if c["backend"] == "ddp-gloo")
    kinds = [{b["extra_info"]["kind"] for b in json.loads(
        (run / r["results"]).read_text())["benchmarks"]} for r in ddp["repeats"]]
    assert "convergence" in kinds[0] and kinds[1] == {"throughput"}  # r2: timing only

    # an unfinished second repetition: --resume reruns it and nothing else
    first = (run / ddp["repeats"][0]["results"]).read_bytes()
    (run / ddp["repeats"][1]["results"]).unlink()
    ddp["repeats"][1].update(status="pending", results=None, seconds=None)
    ddp["status"] = "pending"
    (run / "manifest.json").write_text(json.dumps(man))
    assert cli(["run", "--resume", str(run)]) == 0
    again = json.loads((run / "manifest.json").read_text())
    cell = next(c for c in again["cells"] if c["id"] == ddp["id"])
    assert cell["status"] == "passed" and (run / cell["repeats"][1]["results"]).is_file()
    assert (run / cell["repeats"][0]["results"]).read_bytes() == first  # not rerun

    doc = json.loads(build_report([run], tmp_path / "out" / "report.html")
                     .verdicts.read_text())
    assert doc["runs"][0]["repeat"] == 2
    assert doc["answers"][0]["fastest"]["repetitions"] == 2

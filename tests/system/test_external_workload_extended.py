"""An external workload module at 1 and 2 ranks under torchrun and horovodrun, reported:
the extended tier (tests/system/conftest.py: the tiers) of
tests/system/test_external_workload.py, which says what is checked.

    python -m pytest tests/system/test_external_workload_extended.py -q
"""
from __future__ import annotations

import json

import pytest

from hvd_vs_ddp.workloads.external import slug
from tests.launch import ROOT, horovod_available
from tests.system.test_external_workload import SMALL, SPEC, _explain, cli, records

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers


def test_an_external_workload_runs_at_1_and_2_ranks_and_is_reported(tmp_path):
    ok, why = horovod_available()
    if not ok:
        pytest.skip(f"horovod: {why}")
    spec = str((ROOT / SPEC.split(":")[0]).resolve()) + ":make_workload"
    proc = cli("run", "--runs-dir", str(tmp_path / "runs"), "--name", "ext", "--preset",
               "quick", "--backends", "ddp-gloo,horovod", "--world-sizes", "1,2",
               "--launchers", "torchrun,horovodrun-gloo", "--workloads", SPEC, "--repeat",
               "1", "--suites", "throughput,compute,convergence",  # not the timeline twin
               "--suite-args", f"-k {slug(spec)} {SMALL}")
    assert proc.returncode == 0, _explain(proc)
    run = tmp_path / "runs" / "ext"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["workloads"] == [spec]  # canonical: the file made absolute
    launched = {(c["backend"], c["launcher"], c["world_size"]) for c in manifest["cells"]}
    assert {("ddp-gloo", "single", 1), ("horovod", "single", 1),
            ("ddp-gloo", "torchrun", 2), ("horovod", "horovodrun-gloo", 2)} <= launched
    recs = records(run)
    assert recs and all(r["workload"] == spec for r in recs if "workload" in r)
    conv = {(r["backend"], r["world_size"]): r for r in recs if r["kind"] == "convergence"}
    assert set(conv) == {("ddp-gloo", 1), ("horovod", 1), ("ddp-gloo", 2), ("horovod", 2)}
    for r in conv.values():  # trained like one process on the same global batches
        assert len(r["losses"]) == 4 and r["max_rel_dev"] <= r["tolerance"], r
    thr = {(r["backend"], r["world_size"]) for r in recs if r["kind"] == "throughput"}
    assert {("ddp-gloo", 2), ("horovod", 2)} <= thr
    out = tmp_path / "out" / "report.html"
    rep = cli("report", str(run), "-o", str(out))
    assert rep.returncode == 0, _explain(rep)
    md = out.with_suffix(".md").read_text()
    assert spec in md and "ddp-gloo" in md and "horovod" in md

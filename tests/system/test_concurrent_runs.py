"""Two comparisons at once on one machine: both finish, no port or file clash.

Two `hvd-vs-ddp run` processes start at the same moment, into different run
directories of one runs folder, each with DDP under torchrun and Horovod under
horovodrun --gloo (each launcher picks its own free ports; nothing is fixed: torchrun's
store, Horovod's rendezvous server and Gloo's pairs), the throughput suite in every cell
and Horovod's timeline twin (no compute-only reference cell: another torchrun job, as the
DDP cell is). Three cells a run: horovodrun --mpi's two cells doubled the test's time
(mpirun takes its ports from the system; two Open MPI jobs at once is not checked here,
one job under mpirun is, in test_tox and test_dead_rank). Both must exit 0 with every
cell passed and results of their own. Run "b" starts outside the project with a relative
--runs-dir (its cells run in the suites' folder: before, they wrote their results there
and every cell failed).

    python -m pytest tests/system/test_concurrent_runs.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.launch import ROOT, TINY_RUN_SUITE_ARGS, horovod_available

pytestmark = [pytest.mark.multiproc, pytest.mark.extended]  # conftest.py: the tiers
# What two runs could clash on is set up by every cell whatever it times (each launcher's
# rendezvous ports, Horovod's, the results and timeline files): the throughput suite alone.
TINY = f"{TINY_RUN_SUITE_ARGS} -k throughput"


def test_two_runs_at_once_both_finish(tmp_path):
    backends = "ddp-gloo,horovod" if horovod_available()[0] else "ddp-gloo"
    runs = tmp_path / "runs"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    where = {"a": (ROOT, str(runs)), "b": (tmp_path, "runs")}  # (cwd, --runs-dir)
    procs = {name: subprocess.Popen(
        [sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--backends", backends,
         "--world-sizes", "2", "--workloads", "mlp", "--runs-dir", runs_dir, "--name", name,
         "--launchers", "torchrun,horovodrun-gloo", "--suites", "throughput,timeline",
         "--suite-args", TINY, "--repeat", "1"], cwd=cwd,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True) for name, (cwd, runs_dir) in where.items()}
    deadline = time.monotonic() + 900
    outs = {name: p.communicate(timeout=max(deadline - time.monotonic(), 1))[0]
            for name, p in procs.items()}
    cell_files = {}
    for name, p in procs.items():
        assert p.returncode == 0, f"run {name}:\n{outs[name][-4000:]}"
        manifest = json.loads((runs / name / "manifest.json").read_text())
        assert manifest["complete"] is True
        assert all(c["status"] == "passed" for c in manifest["cells"]), manifest["cells"]
        cell_files[name] = sorted(p.name for p in (runs / name / "cells").glob("*.json")
                                  if not p.name.endswith((".horovod-timeline.json",
                                                          ".plan.json")))
        assert len(cell_files[name]) == len(manifest["cells"])
    assert cell_files["a"] == cell_files["b"]
    if "horovod" in backends:
        assert "horovod-horovodrun-gloo-np2.json" in cell_files["a"]
        assert (runs / "a" / "cells" / "horovod-horovodrun-gloo-np2-timeline.horovod-timeline"
                ".json").is_file()

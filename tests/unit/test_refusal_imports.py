"""A refused `hvd-vs-ddp run` answers without importing torch (about 2.5 of the ~3 CPU-s a
refusal took): the CLI's checks judge names, numbers, hosts, workload parameters and runs
to resume from their declarations; torch is imported where a model is built, a rank
trains, or GPUs are counted on a machine that has GPU device nodes.

One process (the subject: what a fresh `hvd-vs-ddp` imports) is refused once per stage
(argparse, the CLI's own checks, the planned cells, the suites' option parsing, a
workload's declared parameters, a run to resume) and then says whether torch is loaded.

    python -m pytest tests/unit/test_refusal_imports.py -q
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from hvd_vs_ddp.cli import matrix
from tests.bad_inputs import workdir
from tests.launch import ROOT

BEFORE_CELLS = [["run", "--runs-dir", "runs", "--backends", "nccl-typo"],
                ["run", "--runs-dir", "runs", "--world-sizes", "-1"],
                ["run", "--runs-dir", "runs", "--suite-args", "--rounds 0"],
                ["run", "--runs-dir", "runs", "--suite-args", "--workload-param nonsense"],
                ["run", "--runs-dir", "runs", "--workloads", "bert"],
                ["run", "--runs-dir", "runs", "--resume", "runs/nothing-here"],
                ["run", "--runs-dir", "runs", "--resume", "runs/earlier", "--repeat", "4"]]
# Refused after the cells are planned, which counts the GPUs (torch, where GPUs may be).
# (Those refused after each backend is judged, --name and --hosts among them, still import
# torch: the backends' modules import it; hvd_vs_ddp/backends/ is not lazy.)
AFTER_CELLS = [["run", "--runs-dir", "runs", "--preset", "recovery", "--world-sizes", "1"],
               ["run", "--runs-dir", "runs", "--backends", "single", "--world-sizes", "2"]]
HAS_GPU_NODES = any(glob.glob(g) for g in matrix.GPU_DEVICE_NODES)

PROBE = """
import json, sys
from hvd_vs_ddp.cli.app import main
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        codes.append(main(argv))
    except SystemExit as exc:
        codes.append(exc.code)
print(json.dumps({"codes": codes, "torch": "torch" in sys.modules}))
"""


def test_refusals_import_no_torch(tmp_path):
    cases = BEFORE_CELLS + ([] if HAS_GPU_NODES else AFTER_CELLS)
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(cases)],
                          cwd=workdir(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["codes"] == [2] * len(cases), (got, proc.stderr)
    errors = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(errors) == len(cases) and all(ln.startswith("hvd-vs-ddp: error:")
                                             for ln in errors), proc.stderr
    assert got["torch"] is False, "a refused run imported torch"


@pytest.mark.skipif(HAS_GPU_NODES, reason="this machine has GPU device nodes: torch counts")
def test_no_gpu_device_node_means_torch_sees_no_gpu():
    """The shortcut of matrix._gpus (no device node: 0 GPUs, torch not imported) gives
    what torch itself says on this machine."""
    import torch

    assert matrix._gpus() == 0 == (torch.cuda.device_count() if torch.cuda.is_available()
                                   else 0)

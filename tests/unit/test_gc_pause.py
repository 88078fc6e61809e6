"""A cell's start-up pauses the cyclic garbage collector for its imports and every timed
test runs with it back on (hvd_vs_ddp/harness/gc_pause.py, suites/conftest.py).

Mutations that fail here: suites/conftest.py without `gc_pause.resume()` (the tests would
run with the collector off: test_a_cells_tests_run_with_the_collector_on), the plugin
left out of CELL_PLUGINS (nothing paused: the same test).

    python -m pytest tests/unit/test_gc_pause.py -q
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.harness import gc_pause
from hvd_vs_ddp.harness.pytest_args import CELL_PLUGINS

ROOT = Path(__file__).resolve().parents[2]
PROBE = '''import gc
def pytest_plugin_registered(plugin, manager):
    if getattr(plugin, "__name__", "").endswith("conftest"):
        print("GC at the suites' conftest:", gc.isenabled())
def pytest_runtest_call(item):
    print("GC in the test:", gc.isenabled())
'''


def test_resume_undoes_only_its_own_pause():
    assert gc.isenabled()
    try:
        gc_pause.pause()
        assert not gc.isenabled()
        gc_pause.resume()
        assert gc.isenabled()
        gc.disable()            # someone else's choice: resume() leaves it
        gc_pause.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_cells_tests_run_with_the_collector_on(tmp_path):
    """A real cell's pytest (the cell's plugins, the suites, one tiny throughput test): the
    collector is off while the suites' conftest is imported and on in the test."""
    (tmp_path / "gc_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
           "HVD_VS_DDP_PACE_PROBE": "off"}
    launchers.forget_xdist_worker(env)  # a rank is no xdist worker (pytest-benchmark)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *CELL_PLUGINS, "-p", "gc_probe", "-p",
         "no:cacheprovider", "-q", "-s", "suites/test_throughput.py::test_throughput",
         "--backends", "single", "--workloads", "mlp", "--rounds", "1", "--steps-per-round",
         "1", "--warmup-steps", "1"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "GC at the suites' conftest: False" in proc.stdout, proc.stdout[-2000:]
    seen = [ln for ln in proc.stdout.splitlines() if ln.startswith("GC in the test:")]
    assert seen and all(ln.endswith("True") for ln in seen), proc.stdout[-2000:]

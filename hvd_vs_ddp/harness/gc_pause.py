"""A rank's start-up with Python's cyclic garbage collector paused: its imports (torch
above all) make hundreds of thousands of long-lived objects and next to no cyclic
garbage, and the collector traverses them again and again as they pile up, about a tenth
of the imports' CPU here (`python -m hvd_vs_ddp.harness.gc_pause`).

A cell's pytest loads this first (`-p hvd_vs_ddp.harness.gc_pause`,
hvd_vs_ddp/harness/pytest_args.py CELL_PLUGINS): it pauses the collector before the
suites' conftest imports torch, and suites/conftest.py calls `resume()` in
pytest_configure, before the pace probe and any timed work, with one full collection:
every measured step runs with the collector as in any script. Importing the module
pauses nothing; a session without the plugin resumes nothing.

    python -m hvd_vs_ddp.harness.gc_pause      # CPU of `import torch` with and without
"""
from __future__ import annotations

import gc
import subprocess
import sys

_paused = False


def pause() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """The collector back on (and one full collection), if pause() turned it off."""
    global _paused
    if _paused:
        gc.enable()
        gc.collect()
        _paused = False


def pytest_load_initial_conftests(early_config, parser, args) -> None:
    pause()  # before the conftests, whose imports it is for


def _import_cpu(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", f"import time; {code}; "
                          "print(time.process_time())"], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


if __name__ == "__main__":
    runs = 5
    on = sorted(_import_cpu("import torch, pytest") for _ in range(runs))
    off = sorted(_import_cpu("import gc; gc.disable(); import torch, pytest; gc.enable(); "
                             "gc.collect()") for _ in range(runs))
    print(f"import torch, pytest: {on[runs // 2]:.2f} CPU-s with the collector, "
          f"{off[runs // 2]:.2f} paused and then one collection (medians of {runs})")

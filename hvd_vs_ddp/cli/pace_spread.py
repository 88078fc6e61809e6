"""The host's pace spread: how far apart fresh processes run the same fixed work.

`hvd-vs-ddp doctor --pace N` starts N fresh processes one after another, each timing the
pace probe once (hvd_vs_ddp/harness/pace.py, with one intra-op thread, as a rank of a
2-rank cell on two cores has), and reports the sd of the log rate between them: the
part of a repetition's spread that comes from the host giving each process its own pace.
It keeps the figure in the project's cache (`pace-spread.json`), and `hvd-vs-ddp run`
reads it to say, before a run, the smallest difference its repetitions can resolve
(`resolution_line`). A few seconds per process (most of it importing torch).

    hvd-vs-ddp doctor --pace 6
    python -m hvd_vs_ddp.cli.pace_spread 6
"""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hvd_vs_ddp.common.cache import cache_root
from hvd_vs_ddp.run_model.margin import smallest_faster

FILE = "pace-spread.json"
Z95 = 1.959964


def measure(processes: int, progress=None) -> dict:
    """N fresh processes' pre probes; their spread (sd of the log rate)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    rates = []
    for i in range(processes):
        out = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.harness.pace", "--json"],
                             capture_output=True, text=True, env=env, check=True)
        rates.append(float(json.loads(out.stdout.strip().splitlines()[-1])["pre"]))
        if progress:
            progress(f"pace probe {i + 1}/{processes}: {rates[-1]:.0f} products/s")
    logs = [math.log(r) for r in rates]
    sd = statistics.stdev(logs) if len(logs) > 1 else math.nan
    return {"processes": processes, "rates": rates, "sd_log": sd,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def _path() -> Path | None:
    folder = cache_root()
    return None if folder is None else folder / FILE


def save(figures: dict) -> None:
    path = _path()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(figures))
        except OSError:  # a cache that cannot be written: the figure is printed anyway
            pass


def load() -> dict | None:
    path = _path()
    try:
        return json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None


def detectable(sd_log: float, reps: int, margin: float) -> float:
    """The smallest difference a pair of `reps` repetitions a side resolves as 'faster'
    when each repetition's log throughput spreads by sd_log between processes: the 95%
    half-width of the difference of two means is Z95 sd sqrt(2 / reps), and a true ratio
    is called faster once it clears (1 + margin) by that much
    (run_model.margin.smallest_faster)."""
    return smallest_faster(Z95 * sd_log * math.sqrt(2 / max(1, reps)), margin)


def resolution_line(reps: int, margin: float) -> str:
    """What `run` says before it starts, from the last `doctor --pace` on this host."""
    fig = load()
    if not fig or not isinstance(fig.get("sd_log"), (int, float)) or math.isnan(fig["sd_log"]):
        return ("resolution: unknown on this host (hvd-vs-ddp doctor --pace 6 measures how "
                "far apart fresh processes run)")
    sd = float(fig["sd_log"])
    plain = detectable(sd, reps, margin)
    return (f"resolution: with {reps} repetition(s) a side and processes {sd:.1%} apart on "
            f"this host (doctor --pace, {fig.get('measured_at', '?')}), a pair resolves a "
            f"difference of about {plain:.0%} or more as measured; less where the pace "
            f"probe passes its gate and takes the pace out")


def lines(processes: int, margin: float = 0.05, progress=None) -> list[str]:
    fig = measure(processes, progress)
    save(fig)
    sd = fig["sd_log"]
    out = [f"pace spread: sd {sd:.1%} of the log rate over {processes} fresh processes "
           f"({min(fig['rates']):.0f}-{max(fig['rates']):.0f} products/s, one thread)"]
    for reps in (3, 6, 12):
        out.append(f"  {reps:2d} repetitions a side resolve about "
                   f"{detectable(sd, reps, margin):.0%} (before any pace adjustment)")
    return out


if __name__ == "__main__":
    print("\n".join(lines(int(sys.argv[1]) if len(sys.argv) > 1 else 6,
                          progress=lambda s: print(s, file=sys.stderr))))

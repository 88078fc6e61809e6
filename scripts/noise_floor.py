"""The machine's own noise floor: how much of a cell's between-repetition spread is the
host's, before any launcher, library or communication is involved.

Two measurements on the machine as it is, then the runs given beside them:
1. the host: one thread multiplying fixed 256x256 matrices in half-second windows for
   --seconds; the spread of its capacity from window to window (sd of the log), the range
   (5th to 95th percentile) and the first seconds against the rest (a ramp after idle);
2. a fresh process with no library: the `single` backend's throughput cell run --repeat
   times (`hvd-vs-ddp run --backends single`, each repetition a fresh process, the quick
   preset's rounds), split into between-repetition and step-to-step parts
   (hvd_vs_ddp/run_model/variance.py);
3. for each RUN_DIR given, every throughput series' split beside the floor of 2.
If a run's between-repetition spread is no wider than a process that runs no library and
no communication, nothing the harness controls per library (binding, launchers, threads)
can narrow it: only more repetitions, or a quieter machine. The last column says how
many repetitions a side an A/A pair needs at that spread before "equivalent" at ±5% is
possible at all (the best case: one look at 95%).

    python scripts/noise_floor.py                          # ~1.5 min on 2 cores
    python scripts/noise_floor.py runs/RUN --seconds 60 --repeat 8 --workloads gpt
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hvd_vs_ddp.run_model.variance import VarianceSplit, reps_for_equivalence  # noqa: E402


def quick_rounds() -> str:
    """The quick preset's timed rounds (hvd_vs_ddp/cli/presets.py), so the floor is
    measured with the steps a quick run's repetition times."""
    from hvd_vs_ddp.cli.presets import PRESETS

    o = PRESETS["quick"].options
    return (f"--rounds {o.rounds} --steps-per-round {o.steps_per_round} "
            f"--warmup-steps {o.warmup_steps}")


def rep_sd(split: dict) -> float:
    """The sd of one repetition's mean (VarianceSplit.repetition_sd) from its JSON form."""
    return VarianceSplit.from_json(split).repetition_sd


def host_windows(seconds: float, window: float = 0.5) -> np.ndarray:
    """Matrix products per second of one thread, per window, for `seconds`."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        t, n = time.perf_counter(), 0
        while time.perf_counter() - t < window:
            for _ in range(20):
                a @ b
            n += 20
        out.append(n / (time.perf_counter() - t))
    return np.asarray(out)


LAGS_S = (0.5, 2.0, 10.0)


def host_summary(rates: np.ndarray, window: float = 0.5, ramp_s: float = 5.0) -> dict:
    """The windows' spread: sd of the log, the 5-95% range, the first `ramp_s` seconds'
    median against the rest's (1.0: no ramp), and the log capacity's autocorrelation at
    LAGS_S (how long the host's states last: two measurements that far apart share that
    much of their deviation, so a ratio of two taken that close cancels it)."""
    logs = np.log(rates)
    head = max(1, int(ramp_s / window))
    rest = rates[head:] if len(rates) > head else rates
    p5, p95 = np.percentile(rates, [5, 95])
    corr = {}
    for lag_s in LAGS_S:
        k = int(round(lag_s / window))
        a, b = logs[:-k], logs[k:]
        corr[lag_s] = (float(np.corrcoef(a, b)[0, 1]) if len(a) > 2 and a.std() > 0
                       and b.std() > 0 else float("nan"))
    return {"windows": len(rates), "sd_log": float(np.std(logs, ddof=1)) if len(rates) > 1
            else 0.0, "range": float(p95 / p5),
            "ramp": float(np.median(rates[:head]) / np.median(rest)), "autocorr": corr}


def fresh_processes(repeat: int, workloads: str, runs: Path) -> Path:
    """The `single` cell's throughput, `repeat` fresh processes; its run directory."""
    cmd = [sys.executable, "-m", "hvd_vs_ddp.cli", "run", "--backends", "single",
           "--world-sizes", "1", "--workloads", workloads, "--suites", "throughput",
           "--repeat", str(repeat), "--runs-dir", str(runs), "--name", "noise-floor",
           "--suite-args", quick_rounds()]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return runs / "noise-floor"


def splits(run_dir: Path) -> list[dict]:
    """Every throughput series' variance split, as verdicts.json's variance_split has it:
    repetitions timed beside other work left out first, as the report does."""
    from hvd_vs_ddp.reports.answer import variance_split
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames

    run = load_judged_run(run_dir)
    return variance_split(build_frames([run]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", type=Path, help="run directories to set beside it")
    ap.add_argument("--seconds", type=float, default=30.0, help="the host probe's length")
    ap.add_argument("--repeat", type=int, default=6, help="fresh processes of `single`")
    ap.add_argument("--workloads", default="resnet50,gpt",
                    help="comma-separated (default: the quick preset's)")
    a = ap.parse_args(argv)
    for r in a.runs:
        if not (r / "manifest.json").is_file():
            print(f"noise_floor: {r} is not a run directory (no manifest.json)",
                  file=sys.stderr)
            return 2
    if a.repeat < 2:
        print("noise_floor: --repeat must be at least 2 (a spread needs two processes)",
              file=sys.stderr)
        return 2
    print(f"host: one thread, {a.seconds:g} s in half-second windows ...", file=sys.stderr)
    h = host_summary(host_windows(a.seconds))
    print(f"fresh processes: single, {a.workloads}, {a.repeat} repetitions ...",
          file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="noise-floor-") as tmp:
        floor = splits(fresh_processes(a.repeat, a.workloads, Path(tmp)))
    print("| what | sd between (log) | sd step to step (log) | between share | "
          "reps a side for 'equivalent' (A/A, ±5%) |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| host, one thread, window to window ({h['windows']} windows) | "
          f"{h['sd_log']:.3f} (5-95% range x{h['range']:.2f}; first 5 s at "
          f"{h['ramp']:.2f} of the rest; autocorrelation "
          + ", ".join(f"{c:.2f} at {lag:g} s" for lag, c in h["autocorr"].items())
          + ") | | | |")
    for s in floor:
        print(f"| single, {s['case']}, no library, {s['repetitions']} fresh processes | "
              f"{s['between_sd']:.3f} | {s['within_sd']:.3f} | {s['between_share']:.0%} | "
              f"{reps_for_equivalence(rep_sd(s))} |")
    base = {s["case"]: s["between_sd"] for s in floor}
    for run in a.runs:
        for s in splits(run):
            ref = base.get(s["case"], math.nan)
            times = f" (x{s['between_sd'] / ref:.1f} the floor)" if ref > 0 else ""
            print(f"| {run.name}: {s['case']} np{s['world_size']} {s['series']} "
                  f"({s['repetitions']} reps) | {s['between_sd']:.3f}{times} | "
                  f"{s['within_sd']:.3f} | {s['between_share']:.0%} | "
                  f"{reps_for_equivalence(rep_sd(s))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How often is a verdict of this project wrong? The simulation table of docs/methodology.md.

Pairs with known ratios (0.90, 0.95, 1.00, 1.05 by default) built from REAL noise
shapes (every throughput series with 2+ repetitions under tests/fixtures/runs) go
through the report's own bootstrap and margin (hvd_vs_ddp/run_model/verdict_sim.py):
the fixed design (3 repetitions, one look), the budget's sequential rule (looks at 3..9
repetitions, error spent per look) and the naive repeated look (same looks at 95%).
Prints one Markdown table per noise setting: the recorded series as recorded (a loaded
2-core machine: repetition spread 10-160% in log terms), and the pooled shapes scaled to
a repetition spread `--rep-sd` and a step spread `--step-sd`.

    python benchmarks/verdict_simulation.py                       # 300 pairs per ratio
    python benchmarks/verdict_simulation.py --trials 100 --resamples 500 --rep-sd 0.02
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from hvd_vs_ddp.run_model.verdict_sim import Shapes, simulate, table

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--ratios", default="0.90,0.95,1.00,1.05")
    ap.add_argument("--rep-sd", type=float, default=0.02)
    ap.add_argument("--step-sd", type=float, default=0.05)
    ap.add_argument("--planned", type=int, default=3)
    ap.add_argument("--max-reps", type=int, default=9)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--as-recorded", action="store_true", help="also the recorded series "
                    "as recorded (very noisy)")
    ap.add_argument("--runs", default=str(ROOT / "tests" / "fixtures" / "runs"))
    a = ap.parse_args()
    shapes = Shapes.from_runs([Path(a.runs)])
    shapes.steps = a.steps
    ratios = tuple(float(x) for x in a.ratios.split(","))
    settings = [(a.rep_sd, a.step_sd)] + ([(None, None)] if a.as_recorded else [])
    for rep_sd, step_sd in settings:
        t0 = time.time()
        rows = simulate(shapes, ratios, trials=a.trials, planned=a.planned,
                        max_reps=a.max_reps, rep_sd=rep_sd, step_sd=step_sd,
                        resamples=a.resamples)
        what = ("as recorded" if rep_sd is None else
                f"repetition sd {rep_sd:g}, step sd {step_sd:g} (log)")
        print(f"\n{len(shapes.offsets)} recorded series, {what}; {a.trials} pairs per ratio, "
              f"{a.steps} steps per repetition, {a.resamples} resamples, planned "
              f"{a.planned}, max {a.max_reps} ({time.time() - t0:.0f} s)\n")
        print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Does the launcher change a single rank's compute speed? A benchmark, not a test.

Runs the compute-only suite (forward + backward + optimizer step, no communication)
on ONE rank under each launcher that exists here (plain process, torchrun, mpirun,
horovodrun --gloo, horovodrun --mpi), several repetitions in a shuffled interleaved
order, and prints per launcher and workload the median samples/s, the spread over
repetitions, the ratio to torchrun, and the intra-op threads the rank recorded. After
issue 13's thread fix every launcher gives the rank the same threads, so the ratios
should sit inside the run-to-run spread.

    python scripts/launcher_parity.py [--repeat 3] [--workloads resnet50,gpt] [--seed 1]

Takes about 30 s per launch on a 2-core machine (5 launchers x 3 repetitions: ~8 min).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hvd_vs_ddp.backends import launchers  # noqa: E402
from hvd_vs_ddp.harness.options import SUITES  # noqa: E402

LAUNCHERS = ("single", "torchrun", "mpirun", "horovodrun-gloo", "horovodrun-mpi")


def one(launcher: str, workloads: str, out: Path) -> dict[str, tuple[float, int | None]]:
    """{workload: (median samples/s, threads per rank)} of one launch."""
    argv = ["-m", "pytest", SUITES["compute"], "-q", "-p", "no:cacheprovider",
            "--workloads", workloads, "--rounds", "5", "--steps-per-round", "2",
            "--warmup-steps", "2", "--benchmark-json", str(out)]
    env = launchers.env(launcher=launcher)
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    done = subprocess.run(launchers.command(launcher, 1, argv), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"launcher_parity: {launcher} failed (exit {done.returncode}):\n"
                         + done.stdout[-2000:] + done.stderr[-2000:])
    doc = json.loads(out.read_text())
    threads = ((doc.get("machine_info", {}).get("hvd_vs_ddp", {}) or {})
               .get("threads") or {}).get("per_rank")
    res = {}
    for b in doc["benchmarks"]:
        info = b["extra_info"]
        batch = info["per_rank_batch"]  # one rank: the global batch
        res[info["workload"]] = (batch / statistics.median(info["step_times"]), threads)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workloads", default="resnet50,gpt")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    here = [name for name in LAUNCHERS if launchers.available(name)]
    missing = sorted(set(LAUNCHERS) - set(here))
    order = []
    rng = random.Random(args.seed)
    for k in range(args.repeat):
        rnd = list(here)
        rng.shuffle(rnd)
        order += [(k, name) for name in rnd]
    got: dict[tuple[str, str], list[float]] = {}
    threads: dict[str, set] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (k, name) in enumerate(order):
            print(f"[{i + 1}/{len(order)}] repetition {k + 1}: {name}", file=sys.stderr,
                  flush=True)
            for w, (sps, t) in one(name, args.workloads, Path(tmp) / f"{i}.json").items():
                got.setdefault((w, name), []).append(sps)
                threads.setdefault(name, set()).add(t)
    print("| workload | launcher | threads/rank | median samples/s | min-max over "
          "repetitions | / torchrun |")
    print("|---|---|---|---|---|---|")
    for w in args.workloads.split(","):
        ref = statistics.median(got.get((w, "torchrun"), [float("nan")]))
        for name in here:
            vals = got[(w, name)]
            med = statistics.median(vals)
            print(f"| {w} | {name} | {','.join(map(str, sorted(threads[name], key=str)))} "
                  f"| {med:.2f} | {min(vals):.2f}-{max(vals):.2f} | {med / ref:.3f} |")
    if missing:
        print(f"\nnot available here: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

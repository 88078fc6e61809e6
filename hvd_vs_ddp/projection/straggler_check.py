"""The straggler term checked on this machine: fit on 1-2 ranks, predict the slowest of 3-4.

K real processes (one thread each: torch.set_num_threads(1)) run the same step, a
fixed amount of matrix work, in lock step: every step starts at a barrier, as a
synchronous data-parallel step does, and each rank times its own work. What a
synchronous step of K ranks takes is the slowest rank's time; the check fits the
spread of hvd_vs_ddp/projection/stragglers.py (a lognormal body, an exponential tail)
to the per-rank steps of the runs at `--fit` ranks and predicts, at each of `--predict`
ranks, the mean slowest rank's step relative to a rank's median step there, E[max_K X];
it prints it against the measured mean of the per-step maxima over the per-rank median,
with the error, and beside it the lognormal body alone and the empirical bootstrap
maximum. Past the host's cores the ranks are oversubscribed (time slicing): the output
says so.

    python -m hvd_vs_ddp.projection.straggler_check                # fit 1,2; predict 3,4
    python -m hvd_vs_ddp.projection.straggler_check --fit 1,2,4 --predict 8,16 --steps 300
    python -m hvd_vs_ddp.projection.straggler_check --json out.json
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

import numpy as np

from hvd_vs_ddp.projection import stragglers

SIZE = 192   # matrix side: a few ms of one thread's work per step on this machine


def _rank(barrier, queue, rank: int, steps: int, warmup: int, size: int) -> None:
    import torch

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(rank)
    a = torch.randn(size, size, generator=g)
    b = torch.randn(size, size, generator=g)
    out = []
    for i in range(steps + warmup):
        barrier.wait()
        t0 = time.perf_counter()
        c = a
        for _ in range(8):
            c = torch.tanh(c @ b)
        float(c[0, 0])
        if i >= warmup:
            out.append(time.perf_counter() - t0)
    queue.put((rank, out))


def measure(k: int, steps: int = 150, warmup: int = 10, size: int = SIZE) -> np.ndarray:
    """Per-rank step seconds of k lock-step ranks: an array (k, steps)."""
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(k), ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(barrier, queue, r, steps, warmup, size))
             for r in range(k)]
    for p in procs:
        p.start()
    got = dict(queue.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return np.array([got[r] for r in range(k)])


def check(fit: list[int], predict: list[int], steps: int = 150,
          size: int = SIZE, runs: dict | None = None, where: dict | None = None) -> dict:
    """Fit on the runs at `fit` ranks, predict the slowest rank at `predict`
    (`runs`: {ranks: (ranks, steps) seconds} measured elsewhere, else measured here)."""
    runs = runs or {k: measure(k, steps, size=size)
                    for k in sorted(set(fit) | set(predict))}
    pooled = [row for k in fit for row in runs[k]]
    sigma, beta = stragglers.fit(pooled)
    rel = np.concatenate([np.asarray(row) / np.median(row) for row in pooled])
    where = where or {"cores": os.cpu_count() or 1, "load": os.getloadavg()}
    cores = int(where["cores"])
    rows = []
    for k in predict:
        t = np.asarray(runs[k])
        med = float(np.median(t))
        measured = float(np.mean(t.max(axis=0)) / med)
        predicted = stragglers.expected_max(sigma, k, beta)
        body = stragglers.expected_max(sigma, k)
        boot = stragglers.empirical_expected_max(rel, k)
        rows.append({"ranks": k, "oversubscribed": k > cores, "median_ms": med * 1000,
                     "measured": measured, "predicted": predicted,
                     "error": predicted / measured - 1,
                     "lognormal": body, "lognormal_error": body / measured - 1,
                     "bootstrap": boot, "bootstrap_error": boot / measured - 1})
    return {"fit": fit, "sigma": sigma, "beta": beta, "steps": int(np.asarray(
        runs[fit[0]]).shape[1]), "cores": cores, "load": list(where["load"]), "rows": rows}


def render(res: dict) -> str:
    lines = [f"fitted on {','.join(map(str, res['fit']))} rank(s): body sigma "
             f"{res['sigma']:.2%}, tail mean excess {res['beta']:.3f} of a median step "
             f"({res['steps']} lock-step steps each, {res['cores']} cores, load average "
             f"{res['load'][0]:.1f})",
             "| ranks | median step ms | slowest / median, measured | predicted | error "
             "| lognormal body alone | error | bootstrap max | error |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in res["rows"]:
        over = " (oversubscribed)" if r["oversubscribed"] else ""
        lines.append(f"| {r['ranks']}{over} | {r['median_ms']:.2f} | {r['measured']:.3f} | "
                     f"{r['predicted']:.3f} | {r['error']:+.1%} | {r['lognormal']:.3f} | "
                     f"{r['lognormal_error']:+.1%} | {r['bootstrap']:.3f} | "
                     f"{r['bootstrap_error']:+.1%} |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated rank counts >= 1")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.projection.straggler_check",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", type=_ints, default=[1, 2])
    ap.add_argument("--predict", type=_ints, default=[3, 4])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--size", type=int, default=SIZE)
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--from-json", help="per-rank steps measured elsewhere: a JSON object "
                    "{\"lock\": {ranks: [[seconds per step] per rank]}} (the device run "
                    "of docs/projection.md, 'Stragglers')")
    args = ap.parse_args(argv)
    if args.steps < 20:
        ap.error("--steps: at least 20 (the fit reads the 90th percentile)")
    runs = where = None
    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
        runs = {int(k): v for k, v in doc["lock"].items()}
        where = {"cores": doc.get("cores", 0), "load": doc.get("load", [float("nan")])}
        missing = sorted((set(args.fit) | set(args.predict)) - set(runs))
        if missing:
            ap.error(f"--from-json: no runs at {missing} ranks")
    res = check(args.fit, args.predict, args.steps, args.size, runs, where)
    print(render(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

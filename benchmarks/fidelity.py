"""Throughput fidelity: the suite's samples/s against the minimal loop of the same library.

Does the suite measure the library, or itself? For each workload and each
configuration (single at 1 rank; DDP and Horovod at each world size), this launches, in a
shuffled interleaved order, R times, fresh processes of
  suite    suites/test_throughput.py::test_throughput for that backend, its defaults
           (input mode `device`: ready batches, hvd_vs_ddp/workloads/feed.py), with the
           same warm-up and number of timed steps as the loop;
  minimal  benchmarks/minimal/{single,ddp,horovod}_loop.py: the same model, optimizer and
           loss built by hand, one batch on the device, zero_grad / forward / backward / step
and prints per configuration the median samples/s of each, the ratio suite / minimal with
its 95% bootstrap interval (repetitions resampled in pairs), and per world size the
Horovod / DDP ratio as the suite reads it and as the minimal loops read it. The bar:
suite / minimal >= 0.97; the suite's Horovod/DDP ratio within 3% of the loops'.

    python benchmarks/fidelity.py [--workloads resnet50,gpt] [--world-sizes 1,2] [--repeat 3]
        [--warmup 2] [--steps 10] [--param resnet50:image_size=224 ...] [--batch 0]
        [--precision fp32] [--channels-last] [--json OUT]

On the CPU DDP runs over Gloo under torchrun and Horovod under horovodrun --gloo; on a GPU
DDP runs over NCCL (scripts/gpu_check.py calls `launch` for its fidelity lines and
`run_suite` for its suite lines; gpu_step_costs.py calls `launch`). Run it on
an otherwise idle machine: every figure is a timing. About 15-25 s per launch on the 2-core
CPU machine (the quick preset's sizes).
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hvd_vs_ddp.results_schema import ResultsError, ThroughputRecord, load_cell_results  # noqa: E402

MINIMAL = ROOT / "benchmarks" / "minimal"
BAR, PAIR_BAR = 0.97, 0.03
# configuration -> (the suite's backend, the minimal loop); the launcher follows the device
CONFIGS = {"single": ("single", "single_loop.py"), "ddp": (None, "ddp_loop.py"),
           "horovod": ("horovod", "horovod_loop.py")}


def _launcher(config: str, cuda: bool, hvd_controller: str = "gloo") -> str:
    return {"single": "single", "ddp": "torchrun",
            "horovod": f"horovodrun-{hvd_controller}"}[config]


def _backend(config: str, cuda: bool) -> str:
    return CONFIGS[config][0] or ("ddp-nccl" if cuda else "ddp-gloo")


def run_command(cmd: list[str], env: dict[str, str] | None, limit: float,
                cwd: Path = ROOT) -> tuple[int, str]:
    """(exit status, stdout + stderr) of `cmd` in its own session; 124 and what it had
    written when it ran past `limit` seconds."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=limit, start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        out = out if isinstance(out, str) else out.decode(errors="replace")
        return 124, f"{out}\ntimed out after {limit:.0f} s"
    return p.returncode, p.stdout + p.stderr


def throughput_record(path: Path) -> ThroughputRecord | None:
    """The first throughput record of a results file the suite wrote, read by the results
    format's own loader (checked, typed), or None when it holds none."""
    return next((b.record for b in load_cell_results(path).benchmarks
                 if isinstance(b.record, ThroughputRecord)), None)


def run_suite(launcher: str, world: int, options: list[str], out: Path, limit: float,
              root: Path = ROOT) -> tuple[int, str, ThroughputRecord | None]:
    """suites/test_throughput.py::test_throughput under `launcher` at `world` ranks with
    the suite's `options`: (exit status, output, its throughput record or None)."""
    from hvd_vs_ddp.backends import launchers

    argv = ["-m", "pytest", "suites/test_throughput.py::test_throughput", "-q",
            "-p", "no:cacheprovider", *options, "--benchmark-json", str(out)]
    env = launchers.env(launcher=launcher)
    env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
    rc, text = run_command(launchers.command(launcher, world, argv), env, limit, root)
    try:
        return rc, text, throughput_record(out) if out.exists() else None
    except ResultsError as err:
        return rc or 1, f"{text}\n{err}", None


def launch(kind: str, config: str, world: int, workload: str, shape: dict, folder: Path,
           cuda: bool, limit: float = 600, hvd_controller: str = "gloo",
           root: Path = ROOT) -> tuple[float, ThroughputRecord | None]:
    """(samples/s, the suite's throughput record or None) of one fresh launch: kind
    "suite" or "minimal"; `shape`: warmup, steps, params (KEY=VALUE), batch (0: the
    workload's), precision, channels_last, and optionally steps_per_round (the suite's
    rounds; default all steps in one) and loop_options (more options for the minimal
    loop); `root`: the checkout whose suite runs (another commit's, to measure before and
    after in one interleaved run). RuntimeError with the output's tail when it fails."""
    from hvd_vs_ddp.backends import launchers

    launcher = _launcher(config, cuda, hvd_controller)
    params = [f"{k}={v}" for k, v in shape["params"].items()]
    if shape["batch"]:
        params.append(f"batch_size={shape['batch']}")
    if kind == "suite":
        knob = ("channels-last" if shape["channels_last"] and shape["precision"] == "fp32"
                else shape["precision"] if not shape["channels_last"]
                else f"{shape['precision']}-channels-last")
        per_round = shape.get("steps_per_round") or shape["steps"]
        options = ["--backends", _backend(config, cuda), "--workloads", workload,
                   "--warmup-steps", str(shape["warmup"]),
                   "--rounds", str(max(shape["steps"] // per_round, 1)),
                   "--steps-per-round", str(per_round), "--ddp-sample-rate", "0",
                   *(a for p in params for a in ("--workload-param", f"{workload}:{p}"))]
        options += [] if knob == "fp32" else ["--knob-set", knob]
        out = folder / f"suite-{config}-{world}-{time.monotonic_ns()}.json"
        rc, text, rec = run_suite(launcher, world, options, out, limit, root)
        if rc != 0:
            raise RuntimeError(f"suite {config} x{world} failed (exit {rc}):\n{text[-2500:]}")
        if rec is None or rec.samples_per_s_median is None:
            raise RuntimeError(f"suite {config} x{world} wrote no throughput record "
                               f"(skipped?):\n{text[-2500:]}")
        return float(rec.samples_per_s_median), rec
    argv = [str(MINIMAL / CONFIGS[config][1]), "--workload", workload,
            "--warmup", str(shape["warmup"]), "--steps", str(shape["steps"]),
            "--precision", shape["precision"],
            *(a for p in params for a in ("--param", p)), *shape.get("loop_options", ())]
    argv += ["--channels-last"] if shape["channels_last"] else []
    env = launchers.env(launcher=launcher)
    env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
    rc, text = run_command(launchers.command(launcher, world, argv), env, limit, root)
    # a minimal loop that printed its figure and then crashed in teardown measured it
    if rc != 0 and "MINIMAL {" not in text:
        raise RuntimeError(f"minimal {config} x{world} failed (exit {rc}):\n{text[-2500:]}")
    # horovodrun prefixes each line with its rank ("[0]<stdout>:")
    line = next(ln for ln in text.splitlines() if "MINIMAL {" in ln)
    return float(json.loads(line.split("MINIMAL ", 1)[1])["samples_per_s"]), None


def interval(mine: list[float], loop: list[float]) -> tuple[float, float]:
    """95% bootstrap interval of median(suite) / median(loop), repetitions resampled in
    pairs (a repetition's two launches ran side by side and share its drift):
    scipy.stats.bootstrap, BCa where it can, percentile where the resamples tie."""
    import numpy as np
    from scipy import stats

    def ratio(a, b, axis=-1):
        return np.median(a, axis=axis) / np.median(b, axis=axis)

    if len(mine) < 3:
        return float("nan"), float("nan")
    for method in ("BCa", "percentile"):
        res = stats.bootstrap((np.asarray(mine), np.asarray(loop)), ratio, paired=True,
                              vectorized=True, n_resamples=4999, method=method,
                              random_state=np.random.default_rng(0))
        low, high = res.confidence_interval
        if np.isfinite(low) and np.isfinite(high):
            return float(low), float(high)
    return float("nan"), float("nan")


def table(got: dict, workloads: list[str], worlds: list[int]) -> list[str]:
    """The fidelity table and the Horovod/DDP rows, as Markdown lines."""
    med = statistics.median
    rows = ["| workload | configuration | suite samples/s | minimal samples/s | suite / "
            "minimal [95%] | per repetition | bar 0.97 |", "| --- | --- | ---: | ---: | --- "
            "| --- | --- |"]
    pairs = ["| workload | ranks | Horovod/DDP, suite | Horovod/DDP, minimal | suite / "
             "minimal | within 3% |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    for w in workloads:
        for n in worlds:
            for c in CONFIGS:
                if (c, n, w) not in got:
                    continue
                s, m = got[c, n, w]["suite"], got[c, n, w]["minimal"]
                lo, hi = interval(s, m)
                r = med(s) / med(m)
                each = [a / b for a, b in zip(s, m)]
                bar = "met" if lo >= BAR else "not met" if hi < BAR else \
                    ("met by the estimate" if r >= BAR else "below by the estimate")
                rows.append(f"| {w} | {c} x{n} | {med(s):.1f} | {med(m):.1f} | {r:.3f} "
                            f"[{lo:.3f}-{hi:.3f}] | {min(each):.3f}-{max(each):.3f} | {bar} |")
            if ("ddp", n, w) in got and ("horovod", n, w) in got:
                d, h = got["ddp", n, w], got["horovod", n, w]
                rs = med(h["suite"]) / med(d["suite"])
                rm = med(h["minimal"]) / med(d["minimal"])
                ok = "yes" if abs(rs / rm - 1) <= PAIR_BAR else "no"
                pairs.append(f"| {w} | {n} | {rs:.3f} | {rm:.3f} | {rs / rm:.3f} | {ok} |")
    return rows + [""] + pairs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="resnet50,gpt")
    ap.add_argument("--world-sizes", default="1,2")
    ap.add_argument("--configs", default="single,ddp,horovod")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--param", action="append", default=[],
                    help="WORKLOAD:KEY=VALUE, the workload's parameter (repeatable)")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--seed", type=int, default=58)
    ap.add_argument("--json", help="write every launch's figure here")
    ap.add_argument("--before", metavar="CHECKOUT", help="also the suite of another "
                    "checkout (e.g. a git worktree of the commit before a change), "
                    "interleaved with the rest: kind suite-before")
    args = ap.parse_args()
    import torch

    cuda = torch.cuda.is_available()
    workloads = [w for w in args.workloads.split(",") if w]
    worlds = [int(n) for n in args.world_sizes.split(",") if n]
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        print(f"fidelity: error: unknown configuration(s) {unknown}; expected some of "
              f"{', '.join(CONFIGS)}", file=sys.stderr)
        return 2
    cells = [(c, n, w) for w in workloads for n in worlds for c in configs
             if not (c == "single" and n > 1)]
    rng = random.Random(args.seed)
    raw: dict = {}  # (config, world, workload) -> kind -> repetition -> samples/s
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            kinds = ("suite", "minimal") + (("suite-before",) if args.before else ())
            order = [(k, *cell) for cell in cells for k in kinds]
            rng.shuffle(order)
            for kind, c, n, w in order:
                shape = {"warmup": args.warmup, "steps": args.steps, "batch": args.batch,
                         "precision": args.precision, "channels_last": args.channels_last,
                         "params": dict(p.split(":", 1)[1].split("=", 1) for p in args.param
                                        if p.split(":", 1)[0] == w)}
                root = Path(args.before).resolve() if kind == "suite-before" else ROOT
                for attempt in (1, 2):  # one failed launch is tried again, then left out
                    try:
                        sps = launch(kind.split("-")[0], c, n, w, shape, Path(tmp), cuda,
                                     root=root)[0]
                        break
                    except (RuntimeError, StopIteration) as exc:
                        print(f"rep {rep + 1} {w} {c} x{n} {kind}: failed (attempt "
                              f"{attempt}): {str(exc).splitlines()[0]}", flush=True)
                        sps = float("nan")
                if sps == sps:  # nan: left out, and the repetition's pair with it (paired)
                    raw.setdefault((c, n, w), {k: {} for k in kinds})[kind][rep] = sps
                print(f"rep {rep + 1} {w:9s} {c:8s} x{n} {kind:8s} {sps:9.2f} samples/s",
                      flush=True)
    got = {key: {k: [v[k][r] for r in sorted(set.intersection(*(set(x) for x in v.values())))]
                 for k in v} for key, v in raw.items()}
    print(f"\n{args.steps} timed steps after {args.warmup}, {args.repeat} repetitions, "
          f"{'GPU' if cuda else 'CPU'}, {args.precision}"
          f"{', channels_last' if args.channels_last else ''}")
    print("\n".join(table(got, workloads, worlds)))
    if args.before:
        before = {k: {"suite": v["suite-before"], "minimal": v["minimal"]}
                  for k, v in got.items()}
        print(f"\nThe suite of {args.before} (before), against the same minimal loops:")
        print("\n".join(table(before, workloads, worlds)))
    if args.json:
        Path(args.json).write_text(json.dumps([{"config": c, "world_size": n, "workload": w,
                                                **v} for (c, n, w), v in got.items()]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

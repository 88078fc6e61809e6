"""The one prepared GPU check: every GPU line of the project on one machine, one table.

Run it on a machine with a GPU (a lent one, or a user's node) before trusting a GPU
comparison; on a machine without one every line is skipped with its reason (exit 0):

    bash scripts/gpu_check.sh                       # set-up's virtualenv, then this
    python scripts/gpu_check.py --out gpu-check     # the table, gpu-check/gpu_check.json
    python scripts/gpu_check.py --horovod-benchmark PATH/pytorch_synthetic_benchmark.py

Lines (each real processes under the real launcher, hvd_vs_ddp/backends/launchers.py):
- every GPU line of `hvd-vs-ddp doctor --selftest` (hvd_vs_ddp/cli/selftest.py): ddp-nccl
  and Horovod's NCCL operations at 1 GPU and at all GPUs, every GPU pair's NCCL
  allreduce, fp16 (with accumulation) and bf16 AMP, channels_last, NVML on the right GPU,
  DataParallel over 2+ GPUs, CUDA-aware MPI (the lines that need 2+ GPUs skip on one);
- torch.compile on the GPU's inductor path: the throughput suite's `inductor` knob set
  (docs/compile.md) for ddp-nccl (torchrun) and Horovod (horovodrun), at one rank;
- fidelity: ResNet-50 at 224 px, batch 32 and 64 fp32 and 256 bf16 NHWC, one rank: the
  throughput suite's samples/s for single, ddp-nccl and horovod against the minimal loop of
  the same library (benchmarks/minimal/: one batch on the GPU, nothing else in the loop;
  benchmarks/fidelity.py launches both), each ratio held to 0.97 and the suite's
  Horovod/DDP ratio to within 3% of the loops'; and at batch 64 against Horovod's own
  synthetic benchmark (examples/pytorch/pytorch_synthetic_benchmark.py of Horovod's
  repository, run as it is published, unmodified; not shipped here: give its path), bar
  0.97. The suite's step runs under the sync guard (hvd_vs_ddp/workloads/sync_guard.py:
  torch's sync detector on around the harness's own code), so a suite line that passes
  made no harness sync on the GPU;
- NVML energy: the suite's GPU energy over the timed rounds (hvd_vs_ddp/harness/monitor.py),
  in joules per sample, from the ResNet-50 batch-64 cells.
- host waits: benchmarks/host_waits.py per library at one rank, every wait of a
  timed round (synchronizations, blocking or pageable copies, values read on the host) with
  its cost per step and whose it is, in `device` mode and in `memory` mode unpinned
  (pageable copies); a line fails if the harness made a wait in `device` mode.
Exit 1 when a line that could run failed. `--parts fidelity,waits` runs those two parts
alone (24 launches and Horovod's benchmark: about 8 minutes on one H100/H200); all parts
about 11-13 minutes (a cold inductor compile is much of the rest).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import fidelity  # noqa: E402

from hvd_vs_ddp.backends import launchers  # noqa: E402
from hvd_vs_ddp.cli import selftest  # noqa: E402
from hvd_vs_ddp.results_schema import ThroughputRecord  # noqa: E402

CPU_LINES = {"single", "dp", "ddp-gloo", "ddp-mpi", "horovod-gloo", "horovod-mpi"}
BATCH = 64


@dataclass
class Line:
    id: str
    what: str
    where: str = "-"
    status: str = "skip"     # pass | fail | skip
    seconds: float = 0.0
    figure: str = ""         # the measured figure, or why it was skipped / failed


def _suite_line(id: str, what: str, launcher: str, backend: str, skip: str | None,
                args: list[str], json_path: Path,
                limit: float) -> tuple[Line, ThroughputRecord | None]:
    """One line that runs the throughput suite at one rank (or is skipped with `skip`):
    the line, with its samples/s or its failure, and the suite's throughput record."""
    line = Line(id, what, f"{launcher} x1")
    if skip:
        line.where, line.figure = "-", skip
        return line, None
    say(id)
    t0 = time.monotonic()
    rc, out, rec = fidelity.run_suite(launcher, 1, ["--backends", backend, *args], json_path,
                                      limit)
    line.seconds = time.monotonic() - t0
    if rc != 0 or rec is None:
        line.status, line.figure = "fail", f"exit {rc}: {selftest._reason(out)}"
        return line, None
    line.status = "pass"
    line.figure = f"{rec.samples_per_s_median or 0:.4g} samples/s"
    return line, rec


# the fidelity grid: (label, batch, precision, channels_last)
SHAPES = (("b32", 32, "fp32", False), ("b64", 64, "fp32", False),
          ("b256-bf16-nhwc", 256, "bf16", True))
FIDELITY_BAR, PAIR_BAR = 0.97, 0.03


def fidelity_lines(out_dir: Path, limit: float, skips: dict, hvd_ctl: str,
                   measured: dict, energy: dict) -> list[Line]:
    """Per shape and library: the suite and the minimal loop, interleaved, one rank; the
    ratio suite / minimal (bar 0.97) and Horovod/DDP as each reads it (within 3%)."""
    lines: list[Line] = []
    steps = {"warmup": 10, "steps": 30, "params": {"image_size": 224}}
    for label, batch, precision, nhwc in SHAPES:
        shape = {**steps, "batch": batch, "precision": precision, "channels_last": nhwc}
        got: dict[tuple[str, str], float] = {}
        for config in ("single", "ddp", "horovod"):
            for kind in ("minimal", "suite"):
                line = Line(f"fidelity:{label}:{config}:{kind}",
                            f"ResNet-50 224px {label}, {kind} {config}",
                            f"{fidelity._launcher(config, True, hvd_ctl)} x1")
                lines.append(line)
                if skips[config]:
                    line.where, line.figure = "-", skips[config]
                    continue
                say(line.id)
                t0 = time.monotonic()
                try:
                    sps, rec = fidelity.launch(kind, config, 1, "resnet50", shape, out_dir,
                                               True, limit, hvd_ctl)
                except (RuntimeError, StopIteration) as exc:
                    line.status, line.figure = "fail", selftest._reason(str(exc))
                    continue
                finally:
                    line.seconds = time.monotonic() - t0
                line.status, line.figure = "pass", f"{sps:.4g} samples/s"
                got[config, kind] = sps
                if rec is not None and batch == BATCH:
                    measured[config] = sps
                    joules = [r.get("gpu_energy_j")
                              for r in (rec.monitor or {}).get("ranks", [])]
                    n = len(rec.step_times)
                    if joules and all(j is not None for j in joules) and n:
                        energy[config] = sum(joules) / (n * batch)
        ratio = Line(f"fidelity:{label}:suite/minimal", f"suite / minimal loop, {label} "
                     f"(bar {FIDELITY_BAR}), and Horovod/DDP from each (within 3%)")
        lines.append(ratio)
        parts = [f"{c} {got[c, 'suite'] / got[c, 'minimal']:.3f}"
                 for c in ("single", "ddp", "horovod") if (c, "suite") in got
                 and (c, "minimal") in got]
        if not parts:
            ratio.figure = "needs a suite and a minimal line of one library"
            continue
        low = min(got[c, "suite"] / got[c, "minimal"] for c in ("single", "ddp", "horovod")
                  if (c, "suite") in got and (c, "minimal") in got)
        ratio.figure = ", ".join(parts)
        if all((c, k) in got for c in ("ddp", "horovod") for k in ("suite", "minimal")):
            rs = got["horovod", "suite"] / got["ddp", "suite"]
            rm = got["horovod", "minimal"] / got["ddp", "minimal"]
            ratio.figure += f"; Horovod/DDP suite {rs:.3f}, minimal {rm:.3f}"
            low = min(low, 1.0 if abs(rs / rm - 1) <= PAIR_BAR else 0.0)
        ratio.status = "pass" if low >= FIDELITY_BAR else "fail"
    return lines


def synthetic_lines(horovod_benchmark: str | None, hvd_launcher: str, skip_why: str | None,
                    limit: float, measured: dict) -> list[Line]:
    """Horovod's own synthetic benchmark at batch 64 on the same GPU, and the suite's
    horovod line against it (bar 0.97)."""
    bench = Line("resnet50:horovod-synthetic", "Horovod's pytorch_synthetic_benchmark.py "
                 f"b{BATCH}", f"{hvd_launcher} x1")
    path = horovod_benchmark or os.environ.get("HOROVOD_SYNTHETIC_BENCHMARK")
    skip = skip_why or (None if path and Path(path).is_file() else
                        "Horovod's examples/pytorch/pytorch_synthetic_benchmark.py "
                        "not given (--horovod-benchmark PATH)")
    if skip:
        bench.where, bench.figure = "-", skip
    else:
        assert path is not None  # not skipped
        say("horovod synthetic benchmark")
        t0 = time.monotonic()
        cmd = launchers.command(hvd_launcher, 1, [str(Path(path).resolve()), "--batch-size",
                                                  str(BATCH)])
        rc, out = fidelity.run_command(cmd, launchers.env(launcher=hvd_launcher), limit)
        bench.seconds = time.monotonic() - t0
        m = re.search(r"Img/sec per GPU: ([\d.]+) \+-([\d.]+)", out)
        if rc == 0 and m:
            measured["horovod-synthetic"] = float(m.group(1))
            bench.status, bench.figure = "pass", f"{m.group(1)} +-{m.group(2)} img/s"
        else:
            bench.status, bench.figure = "fail", f"exit {rc}: {selftest._reason(out)}"
    ratio = Line("resnet50:suite/synthetic", "suite horovod / Horovod's benchmark, same GPU "
                 f"(bar {FIDELITY_BAR})")
    if "horovod" in measured and "horovod-synthetic" in measured:
        value = measured["horovod"] / measured["horovod-synthetic"]
        ratio.status = "pass" if value >= FIDELITY_BAR else "fail"
        ratio.figure = f"{value:.3f}"
        if "single" in measured:
            ratio.figure += (f" (single / synthetic "
                             f"{measured['single'] / measured['horovod-synthetic']:.3f})")
    else:
        ratio.figure = "needs both the suite's horovod line and Horovod's benchmark"
    return [bench, ratio]


def waits_lines(out_dir: Path, limit: float, skips: dict, hvd_ctl: str) -> list[Line]:
    """benchmarks/host_waits.py per library at one rank, ResNet-50 224 px batch 32: the
    host waits of a timed round in `device` mode and in `memory` mode unpinned (pageable
    copies); a line passes when the harness made no wait in `device` mode. Each table is
    written to out_dir/host-waits-*.md."""
    lines: list[Line] = []
    for config in ("single", "ddp", "horovod"):
        backend = fidelity._backend(config, True)
        launcher = fidelity._launcher(config, True, hvd_ctl)
        for mode, extra in (("device", []), ("memory-unpinned", ["--pin-memory", "off"])):
            line = Line(f"waits:{config}:{mode}", f"host waits in a timed round, {backend}, "
                        f"input {mode}", f"{launcher} x1")
            lines.append(line)
            if skips[config]:
                line.where, line.figure = "-", skips[config]
                continue
            say(line.id)
            argv = [str(ROOT / "benchmarks" / "host_waits.py"), "--backend", backend,
                    "--param", "image_size=224", "--param", "batch_size=32", "--input",
                    mode.split("-")[0], *extra, "--guard", "on" if mode == "device" else "off"]
            t0 = time.monotonic()
            rc, out = fidelity.run_command(launchers.command(launcher, 1, argv),
                                           launchers.env(launcher=launcher), limit)
            line.seconds = time.monotonic() - t0
            table = [r[r.index("| "):] for r in out.splitlines() if "| " in r]  # horovodrun
            rows = [r for r in table if "---" not in r and not r.startswith("| wait")]  # prefixes
            (out_dir / f"host-waits-{config}-{mode}.md").write_text(out)
            if rc != 0:
                line.status, line.figure = "fail", f"exit {rc}: {selftest._reason(out)}"
                continue
            ours = [r for r in rows if r.split("|")[2].strip() == "harness"]
            per_step = sum(float(r.split("|")[4]) for r in ours)
            line.figure = (f"harness: {len(ours)} kinds, {per_step:.3f} ms/step; all: "
                           + "; ".join(" ".join(c.strip() for c in r.split("|")[1:5])
                                       for r in rows[:4]))
            line.status = "pass" if mode != "device" or not ours else "fail"
    return lines


PARTS = ("selftest", "compile", "fidelity", "waits")


def check(horovod_benchmark: str | None, out_dir: Path, limit: float,
          parts: tuple[str, ...] = PARTS) -> list[Line]:
    facts = selftest._facts()
    lines: list[Line] = []
    no_gpu = None if facts["gpus"] else (f"no CUDA device visible (torch {facts['torch']}, "
                                         f"CUDA build {facts['cuda'] or 'none'})")
    hvd_ctl = "gloo" if facts["horovod"] and "gloo" in facts["horovod"]["controllers"] else "mpi"
    no_hvd = selftest._horovod_skip(facts, hvd_ctl)
    hvd_launcher = f"horovodrun-{hvd_ctl}"
    no_torchrun = selftest._launcher_skip(facts, "torchrun")

    # 1. every GPU line of the self-test
    for c in selftest.plan(facts):
        if c.id in CPU_LINES or "selftest" not in parts:
            continue
        say(f"selftest {c.id}")
        o = selftest.run_check(c, limit)
        where = f"{c.launcher} x{c.nprocs}" if o.status != "skip" else "-"
        lines.append(Line(f"selftest:{c.id}", c.title, where, o.status, o.seconds, o.detail))

    # 2. torch.compile on the GPU (inductor), both libraries, one rank
    compile_args = ["--workloads", "gpt", "--knob-set", "inductor", "--rounds", "3",
                    "--steps-per-round", "5", "--warmup-steps", "3"]
    for backend, launcher, skip in (("ddp-nccl", "torchrun", no_gpu or no_torchrun),
                                    ("horovod", hvd_launcher, no_gpu or no_hvd)):
        if "compile" not in parts:
            continue
        line, rec = _suite_line(f"compile:{backend}", f"torch.compile (inductor) gpt, {backend}",
                                launcher, backend, skip, compile_args,
                                out_dir / f"compile-{backend}.json", limit)
        lines.append(line)
        if rec is not None:
            if rec.compile_mode != "inductor":
                line.status, line.figure = "fail", f"compile_mode {rec.compile_mode!r}"
            else:
                line.figure += f", compile {rec.compile_s or 0:.1f} s"

    # 3. fidelity: the suite against the minimal loop of the same library
    # (benchmarks/minimal/), ResNet-50 224 px at batch 32 and 64 fp32 and 256 bf16 NHWC, one
    # rank each, and against Horovod's own synthetic benchmark at batch 64
    measured: dict[str, float] = {}
    energy: dict[str, float] = {}
    if "fidelity" in parts:
        skips = {"single": no_gpu, "ddp": no_gpu or no_torchrun, "horovod": no_gpu or no_hvd}
        lines += fidelity_lines(out_dir, limit, skips, hvd_ctl, measured, energy)
        lines += synthetic_lines(horovod_benchmark, hvd_launcher, no_gpu or no_hvd, limit,
                                 measured)

    # 4. every host wait of a timed round, whose it is
    if "waits" in parts:
        lines += waits_lines(out_dir, limit, {"single": no_gpu, "ddp": no_gpu or no_torchrun,
                                              "horovod": no_gpu or no_hvd}, hvd_ctl)

    # 5. NVML energy over the timed rounds, joules per sample
    nvml = Line("nvml:energy", f"GPU energy per sample (NVML, suite ResNet-50 b{BATCH} cells)")
    lines.append(nvml)
    if "fidelity" not in parts:
        nvml.figure = "needs the fidelity part (--parts)"
    elif energy:
        nvml.status = "pass"
        nvml.figure = ", ".join(f"{b} {j:.3f} J/sample" for b, j in energy.items())
    elif measured:
        nvml.status, nvml.figure = "fail", "the suite's records carry no GPU energy"
    else:
        nvml.figure = no_gpu or "no ResNet-50 line ran"
    return lines


def say(what: str) -> None:
    print(f"gpu_check: {what}", file=sys.stderr, flush=True)


def table(lines: list[Line]) -> str:
    w = max(len(x.id) for x in lines)
    rows = [f"| {'line':{w}s} | where | result | secs | figure / reason |",
            f"| {'-' * w} | --- | --- | ---: | --- |"]
    for x in lines:
        secs = f"{x.seconds:.0f}" if x.status != "skip" else "-"
        rows.append(f"| {x.id:{w}s} | {x.where} | {x.status.upper()} | {secs} | {x.figure} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--horovod-benchmark", help="path to Horovod's "
                    "examples/pytorch/pytorch_synthetic_benchmark.py (else "
                    "$HOROVOD_SYNTHETIC_BENCHMARK; without it that line skips)")
    ap.add_argument("--out", help="folder for the suites' JSON and gpu_check.json "
                    "(default: a temporary folder)")
    ap.add_argument("--time-limit", type=float, default=240.0,
                    help="seconds per line before its processes are killed (default 240)")
    ap.add_argument("--parts", default=",".join(PARTS),
                    help=f"comma-separated parts to run (default all: {','.join(PARTS)}); "
                    "`--parts fidelity,waits`: the suite's fidelity and host waits alone, "
                    "about 8 minutes")
    args = ap.parse_args(argv)
    parts = tuple(p for p in args.parts.split(",") if p)
    if not parts or set(parts) - set(PARTS):
        print(f"gpu_check: error: --parts {args.parts}: expected some of {', '.join(PARTS)}",
              file=sys.stderr)
        return 2
    if args.horovod_benchmark and not Path(args.horovod_benchmark).is_file():
        print(f"gpu_check: error: --horovod-benchmark {args.horovod_benchmark}: no such file",
              file=sys.stderr)
        return 2
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gpu-check-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    lines = check(args.horovod_benchmark, out_dir, args.time_limit, parts)
    print(table(lines))
    count = {s: sum(x.status == s for x in lines) for s in ("pass", "fail", "skip")}
    print(f"gpu_check: {count['pass']} passed, {count['fail']} failed, {count['skip']} "
          f"skipped in {time.monotonic() - start:.0f}s; JSON: {out_dir / 'gpu_check.json'}")
    (out_dir / "gpu_check.json").write_text(json.dumps([asdict(x) for x in lines], indent=1))
    return 1 if count["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())

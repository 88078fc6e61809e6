"""`hvd-vs-ddp doctor --selftest`: run every path this machine supports, for real.

Each check starts real processes with the real launcher (torchrun, mpirun, horovodrun
--gloo/--mpi; the command lines of hvd_vs_ddp.launchers) running
hvd_vs_ddp.cli.selftest_rank for a few steps of a tiny workload, under a time limit.
A check passes when every rank exits 0 and rank 0 prints "SELFTEST OK"; it is skipped,
with the reason, when the machine lacks what it needs (a launcher, a library, GPUs).
CPU paths: single, dp, ddp-gloo (torchrun), ddp-mpi (mpirun), horovod (horovodrun
--gloo and --mpi), 2 ranks each. GPU paths: a NCCL allreduce in every GPU pair,
ddp-nccl and Horovod NCCL at 1 and all local GPUs, fsdp and zero over NCCL, one GPU
visible per rank, ddp-nccl under mpirun, fp16 (with accumulation) and bf16 AMP,
channels_last, NVML sampling of the right GPU, DataParallel over 2+ GPUs (every GPU's
output seen, bf16 replicas), CUDA-aware MPI detection. Every training check gathers each
rank's GPU UUID and fails if two ranks share one. Refusal checks pass only when the job
stops with backends/placement.py's one-line refusal: two NCCL ranks on one GPU (each rank
sees it alone, or the UUIDs tell), two ranks each given "their own" GPU that is the same
one, two Gloo ranks on one GPU. About a minute on 2 CPU cores; exit 1 if any check failed.
A check asked for by name (--only) that cannot run here fails instead of skipping.

    hvd-vs-ddp doctor --selftest
    python -m hvd_vs_ddp.cli.selftest --only ddp-gloo,horovod-gloo --time-limit 60
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hvd_vs_ddp.backends import catalog, launchers
from hvd_vs_ddp.common.errors import EXIT_BAD_INPUT, InputError, UnknownName, one_line

RANK = ["-m", "hvd_vs_ddp.cli.selftest_rank"]
CPU_TRAIN = ["train", "--device", "cpu", "--backend"]
FIRST_ERRORS = re.compile(r"(Error|ERROR|terminate called|what\(\)|Abort|Traceback|Signal \d+|"
                          r"refused|timed out|Timeout)")


@dataclass
class Check:
    id: str
    title: str
    launcher: str = "single"
    nprocs: int = 1
    args: list[str] = field(default_factory=list)  # selftest_rank's arguments
    skip: str | None = None                         # why this machine cannot run it
    env: dict[str, str] = field(default_factory=dict)
    expect: str | None = None  # a refusal check: exit non-zero with output matching this


@dataclass
class Outcome:
    check: Check
    status: str          # pass | fail | skip
    seconds: float = 0.0
    detail: str = ""
    output: str = ""     # the processes' output, kept for a failed check


def _facts() -> dict:
    import torch

    from hvd_vs_ddp.backends import registry

    f = {"gpus": torch.cuda.device_count() if torch.cuda.is_available() else 0,
         "torch": torch.__version__, "cuda": torch.version.cuda,
         "avail": {b: registry.availability(b) for b in catalog.names(library=catalog.DDP)},
         "launcher": {n: launchers.available(n) for n in launchers.NAMES},
         "horovod": None}
    try:
        from hvd_vs_ddp.backends.horovod import build_info

        f["horovod"] = build_info()
    except Exception as exc:  # not installed, or an extension that does not load
        f["horovod_error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f


def _launcher_skip(f: dict, launcher: str) -> str | None:
    avail = f["launcher"][launcher]
    return None if avail else avail.reason


def _horovod_skip(f: dict, controller: str) -> str | None:
    if f["horovod"] is None:
        return f"Horovod not usable ({f.get('horovod_error')}); run scripts/build_horovod.sh"
    if controller not in f["horovod"]["controllers"]:
        return f"this Horovod has no {controller} controller"
    return _launcher_skip(f, f"horovodrun-{controller}")


def _role(library: str, **having) -> str:
    """The backend of `library` whose catalog row has these values (the one a check is
    about: DDP over NCCL, DataParallel, ...)."""
    return catalog.names(library=library, **having)[0]


def _cpu_checks(f: dict, no_backend) -> list[Check]:
    """One training check per backend of the references and the two libraries that
    trains on a CPU (in the catalog's order), at 2 ranks under the first launcher its
    catalog row names, Horovod under each of its launchers (one per controller)."""
    checks = []
    for name, row in catalog.CATALOG.items():
        if row.library not in (catalog.REFERENCE, *catalog.COMPARED) or row.needs_gpu:
            continue
        if not row.distributed:
            checks.append(Check(name, f"{name} (cpu)", args=[*CPU_TRAIN, name]))
        elif row.library == catalog.HOROVOD_LIB:
            for launcher in row.launchers:  # horovodrun-gloo, horovodrun-mpi
                ctl = launcher.rsplit("-", 1)[1]
                checks.append(Check(f"{name}-{ctl}", f"{name} {ctl} (cpu)", launcher, 2,
                                    [*CPU_TRAIN, name], _horovod_skip(f, ctl)))
        else:
            launcher = row.launchers[0]
            checks.append(Check(name, f"{name} (cpu)", launcher, 2, [*CPU_TRAIN, name],
                                _launcher_skip(f, launcher) or no_backend(name)))
    return checks


def plan(f: dict) -> list[Check]:
    """Every check, with a skip reason where this machine cannot run it."""
    hvd_ctl = "gloo" if f["horovod"] and "gloo" in f["horovod"]["controllers"] else "mpi"

    def no_backend(name: str) -> str | None:
        return None if f["avail"][name] else f"{name}: {f['avail'][name].reason}"

    checks = _cpu_checks(f, no_backend)
    n = f["gpus"]
    no_gpu = None if n else (f"no CUDA device visible (torch {f['torch']}, "
                             f"CUDA build {f['cuda'] or 'none'})")
    few = None if n >= 2 else no_gpu or f"needs 2+ GPUs, {n} visible"
    nccl_ddp, hvd_name = _role(catalog.DDP, needs_gpu=True), _role(catalog.HOROVOD_LIB)
    nccl = no_gpu or _launcher_skip(f, "torchrun") or no_backend(nccl_ddp)
    hvd = no_gpu or _horovod_skip(f, hvd_ctl)
    hvd_launcher = f"horovodrun-{hvd_ctl}"
    ddp = ["train", "--backend", nccl_ddp]
    horovod = ["train", "--backend", hvd_name]
    sharded = catalog.names(library=catalog.SHARDED)
    dp, gloo_ddp = _role(catalog.REFERENCE, single_without_gpus=True), \
        _role(catalog.DDP, transport="gloo")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    last_gpu = (visible.split(",")[-1].strip() if visible else str(max(n - 1, 0)))
    many = f"{n} GPUs" if n > 1 else "all GPUs"
    # one GPU shown to two ranks: all of them on a 1-GPU machine (each rank can tell, unless
    # CUDA_VISIBLE_DEVICES is set), else the last one (the GPU UUIDs, gathered, tell)
    one_gpu = {"CUDA_VISIBLE_DEVICES": last_gpu} if n > 1 else {}
    checks += [
        Check("nccl-pairs", "nccl allreduce, every GPU pair", "torchrun", n,
              ["nccl-pairs"], few or nccl),
        Check(f"{nccl_ddp}-1", f"{nccl_ddp} 1 GPU", "torchrun", 1, ddp, nccl),
        Check(f"{nccl_ddp}-all", f"{nccl_ddp} {many}", "torchrun", n, ddp, few or nccl),
        Check(f"{hvd_name}-nccl-1", f"{hvd_name} nccl 1 GPU", hvd_launcher, 1, horovod, hvd),
        Check(f"{hvd_name}-nccl-all", f"{hvd_name} nccl {many}", hvd_launcher, n, horovod,
              few or hvd),
        Check("amp-fp16", f"fp16 AMP + accumulation 2 ({nccl_ddp})", "torchrun", 1,
              [*ddp, "--precision", "fp16", "--accumulation", "2"], nccl),
        Check("amp-bf16", f"bf16 AMP ({nccl_ddp})", "torchrun", 1,
              [*ddp, "--precision", "bf16"], nccl),
        Check(f"{hvd_name}-amp-fp16", f"fp16 AMP + accumulation 2 ({hvd_name})", hvd_launcher,
              1, [*horovod, "--precision", "fp16", "--accumulation", "2"], hvd),
        Check("channels-last", f"channels_last resnet50 ({catalog.reference()})", args=[
            "train", "--backend", catalog.reference(), "--workload", "resnet50",
            "--channels-last"], skip=no_gpu),
        Check(f"{hvd_name}-channels-last", f"channels_last resnet50 ({hvd_name})",
              hvd_launcher, 1, [*horovod, "--workload", "resnet50", "--channels-last"], hvd),
        Check("nvml", f"NVML samples the right GPU (CUDA_VISIBLE_DEVICES={last_gpu})",
              args=["nvml"], skip=no_gpu, env={"CUDA_VISIBLE_DEVICES": last_gpu}),
        Check(f"{dp}-gpus", f"DataParallel over {many}", args=["train", "--backend", dp],
              skip=few),
        Check(f"{dp}-bf16", f"DataParallel over {many}, bf16 replicas", args=[
            "train", "--backend", dp, "--precision", "bf16"], skip=few),
        *(Check(f"{b}-nccl-1", f"{b} over NCCL 1 GPU", "torchrun", 1,
                ["train", "--backend", b], nccl) for b in sharded),
        *(Check(f"{b}-nccl-all", f"{b} over NCCL {many}", "torchrun", n,
                ["train", "--backend", b], few or nccl) for b in sharded),
        Check("gpu-per-task", f"{nccl_ddp} {many}, one GPU visible per rank", "torchrun", n,
              [*ddp, "--gpu-per-task"], few or nccl),
        Check(f"{nccl_ddp}-mpirun", f"{nccl_ddp} {many} under mpirun", "mpirun", n, ddp,
              few or nccl or _launcher_skip(f, "mpirun")),
        # refusals (backends/placement.py): one line, before NCCL ever sees a duplicate
        Check("refuse-two-nccl-one-gpu", "refused: 2 NCCL ranks, 1 GPU visible to both",
              "torchrun", 2, ddp, nccl, one_gpu, expect=(
                  r"2 ranks on this host but 1 GPU\(s\) visible to each: NCCL needs one GPU"
                  r"|ranks 0, 1 on \S+ would all train on GPU GPU-.*NCCL")),
        Check("refuse-same-gpu-by-uuid", "refused: 2 NCCL ranks given one GPU each, the same",
              "torchrun", 2, [*ddp, "--gpu-per-task", "--same-gpu"], nccl,
              expect=r"ranks 0, 1 on \S+ would all train on GPU GPU-"),
        Check("refuse-gloo-sharing-gpu", "refused: 2 Gloo ranks on 1 GPU",
              "torchrun", 2, ["train", "--backend", gloo_ddp],
              no_gpu or _launcher_skip(f, "torchrun"), one_gpu, expect=(
                  r"2 ranks on this host but 1 GPU\(s\) visible to each: a rank on a GPU"
                  r"|ranks 0, 1 on \S+ would all train on GPU GPU-.*share")),
        Check("srun", "srun across nodes", skip=no_gpu or "needs a Slurm cluster: "
              "deploy/slurm/compare.sbatch (its pmi2/pmix placement: "
              "tests/unit/test_placement.py)"),
        Check("cuda-aware-mpi", "CUDA-aware MPI (detection)", "ompi_info",
              skip=no_gpu or _launcher_skip(f, "mpirun")),
    ]
    return checks


def _reason(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    pattern = re.compile(r"(Error|error:|Exception|refused|not found|No such|Abort|failed)")
    hits = [ln for ln in lines if pattern.search(ln) and not ln.startswith("File ")]
    text = (hits or lines or ["no output"])[-1]
    return text if len(text) <= 140 else text[:137] + "..."


def _cuda_aware_mpi(time_limit: float) -> tuple[str, str]:
    ompi_info = shutil.which("ompi_info")
    if not ompi_info:
        return "skip", "no ompi_info: not Open MPI, cannot tell"
    out = subprocess.run([ompi_info, "--parsable", "--all"], capture_output=True, text=True,
                         timeout=time_limit).stdout
    m = re.search(r"mpi_built_with_cuda_support:value:(\w+)", out)
    if not m:
        return "fail", "ompi_info does not say whether Open MPI was built with CUDA"
    if m.group(1) == "true":
        return "pass", "Open MPI is CUDA-aware (GPU buffers go to MPI directly)"
    return "pass", ("Open MPI is not CUDA-aware: ddp-mpi/horovod --mpi stage GPU tensors "
                    "through the host; NCCL carries GPU traffic")


def run_check(check: Check, time_limit: float) -> Outcome:
    if check.skip:
        return Outcome(check, "skip", detail=check.skip)
    start = time.monotonic()
    if check.id == "cuda-aware-mpi":
        status, detail = _cuda_aware_mpi(time_limit)
        return Outcome(check, status, time.monotonic() - start, detail)
    env = launchers.env(launcher=check.launcher)
    env.update(check.env)
    try:
        cmd = launchers.command(check.launcher, check.nprocs,
                                [*RANK, *check.args, "--timeout", str(time_limit)])
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
    except (OSError, launchers.LauncherUnavailable) as exc:
        return Outcome(check, "fail", time.monotonic() - start, f"cannot start: {exc}")
    try:
        output, _ = proc.communicate(timeout=time_limit)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                output, _ = proc.communicate(timeout=5)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                output = ""
        return Outcome(check, "fail", time.monotonic() - start,
                       f"no result within {time_limit:.0f}s (killed); last: {_reason(output)}",
                       output)
    return judge(check, proc.returncode, output, time.monotonic() - start)


def judge(check: Check, code: int, output: str, secs: float = 0.0) -> Outcome:
    """A finished check's outcome from its exit status and output."""
    if check.expect:  # a refusal: it must stop, saying why
        said = re.search(check.expect, output)
        if code != 0 and said:
            return Outcome(check, "pass", secs, f"refused: ...{said.group(0)}")
        return Outcome(check, "fail", secs, f"exit {code}, expected a refusal "
                       f"matching {check.expect!r}: {_reason(output)}", output)
    ok = re.search(r"SELFTEST OK (.*)", output)
    if code == 0 and ok:
        return Outcome(check, "pass", secs, ok.group(1).strip())
    return Outcome(check, "fail", secs, f"exit {code}: {_reason(output)}", output)


def table(outcomes: list[Outcome]) -> list[str]:
    w = max(len(o.check.title) for o in outcomes)
    lines = [f"{'check':{w}s}  {'launcher':20s} result   secs  detail"]
    for o in outcomes:
        where = f"{o.check.launcher} x{o.check.nprocs}" if o.status != "skip" else "-"
        secs = f"{o.seconds:5.1f}" if o.status != "skip" else "    -"
        lines.append(f"{o.check.title:{w}s}  {where:20s} {o.status.upper():6s} {secs}  "
                     f"{o.detail}")
    return lines


def run(only: list[str] | None = None, time_limit: float = 120.0, out=sys.stdout,
        where_possible: bool = False) -> int:
    start = time.monotonic()
    checks = plan(_facts())
    known = [c.id for c in checks]
    for name in only or []:
        if name not in known:
            raise UnknownName("selftest check", name, known)
    chosen = [c for c in checks if not only or c.id in only]
    outcomes = []
    for check in chosen:
        outcome = run_check(check, time_limit)
        if only and outcome.status == "skip" and not where_possible:  # named: must run
            outcome = Outcome(check, "fail", detail=f"asked for, but cannot run: {outcome.detail}")
        outcomes.append(outcome)
        print(f"selftest: {check.id}: {outcome.status}", file=sys.stderr, flush=True)
    failed_logs = None
    for o in outcomes:
        if o.status == "fail" and o.output:
            failed_logs = failed_logs or Path(tempfile.mkdtemp(prefix="hvd-vs-ddp-selftest-"))
            (failed_logs / f"{o.check.id}.log").write_text(o.output)
            lines = [ln for ln in o.output.splitlines() if ln.strip()]
            first = [ln for ln in lines if FIRST_ERRORS.search(ln)][:8]
            print(f"----- {o.check.id}: first error lines, then the last lines of its output "
                  f"(all of it: {failed_logs / (o.check.id + '.log')}) -----",
                  *first, "...", *lines[-12:], sep="\n", file=out)
    print("\n".join(table(outcomes)), file=out)
    count = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "skip")}
    print(f"selftest: {count['pass']} passed, {count['fail']} failed, {count['skip']} skipped "
          f"in {time.monotonic() - start:.0f}s", file=out, flush=True)
    return 1 if count["fail"] else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hvd-vs-ddp doctor --selftest",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated check ids (default: all)")
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="seconds per check before its processes are killed (default 120)")
    ap.add_argument("--where-possible", action="store_true",
                    help="with --only: a named check this machine cannot run is skipped "
                         "with its reason instead of failing (one command for several "
                         "machines)")
    args = ap.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    try:
        return run(only, args.time_limit, where_possible=args.where_possible)
    except InputError as exc:
        print(f"hvd-vs-ddp: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())

"""The `hvd-vs-ddp` command: doctor, run (a comparison matrix), report and project.

    hvd-vs-ddp doctor                                  # what can run here, and why not
    hvd-vs-ddp doctor --selftest                       # ... and run it all, ~1 minute
    hvd-vs-ddp run --preset quick [--name NAME] [--runs-dir runs] [--repeat N]
    hvd-vs-ddp run --resume runs/<name>                # rerun unfinished/failed cells
    hvd-vs-ddp run --preset quick --profile            # + torch.profiler traces per rank
    hvd-vs-ddp report runs/<name> [runs/<other>] -o reports-out/<name>/report.html \
        [--margin 0.05] [--keep-disturbed]             # + report.md, verdicts.json
        [--price-per-device-hour 2.5] [--epoch-samples 1281167]   # the Cost section
    hvd-vs-ddp project runs/<name> --devices 8,64,512 --devices-per-node 8 \
        --interconnect ib-hdr [--intra-node nvlink4] [--nics-per-node 8]  # a projection
    hvd-vs-ddp project --compute-ms 97 --model resnet50 --devices 16 --interconnect ib-edr

Interrupted by SIGINT (Ctrl-C), SIGTERM or SIGHUP: `run` ends the cell in flight (its
whole process tree), records it as interrupted and exits 130, 143 or 129 (128 + the
signal); `run --resume` finishes the run. `report` leaves any earlier report whole.

Bad input (unknown backend, workload or preset, a launcher that does not fit, a
corrupt manifest, an output path inside a results directory) prints one line
starting with "hvd-vs-ddp: error:" and exits with code 2, changing nothing.

Exit status: 0 done; 1 `run`: some cells failed (0 with --allow-failures);
2 bad input (one line, nothing started, nothing written); 3 `report`: the report
was written, but some passed cells' results files could not be read: each is listed
in the report as "unreadable" with the file and the reason, and in one line
"hvd-vs-ddp: warning: ..." on stderr; 74 a file could not be written (a full disk):
one line "hvd-vs-ddp: error: writing PATH: No space left on device", the previous
file left as it was; 130, 143, 129: interrupted by SIGINT, SIGTERM, SIGHUP.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
from pathlib import Path

from hvd_vs_ddp.common import interrupt
from hvd_vs_ddp.common.errors import (
    EXIT_BAD_INPUT,
    EXIT_PARTIAL_REPORT,
    EXIT_WRITE_FAILED,
    InputError,
    one_line,
)
from hvd_vs_ddp.common.log import configure as configure_logging
from hvd_vs_ddp.common.log import log


class CliError(InputError):
    pass


def _doctor(args) -> int:
    if args.only and not args.selftest:
        raise CliError("--only selects selftest checks; use it with --selftest")
    if args.selftest:  # real processes on every path this machine supports
        from hvd_vs_ddp.cli import selftest
        return selftest.main([f"--only={args.only}"] if args.only else [])
    from hvd_vs_ddp.cli.doctor import report_lines

    print("\n".join(report_lines()))
    return 0


def _positive(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a number of seconds > 0")
    return value


def _given(text: str) -> str:
    """argparse type of a name or path option: an empty value is refused, not taken as
    'not given' (`--name ""` would silently mean the default name)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a value, got an empty string")
    if "\x00" in text:  # no file or run name can hold one (only reachable in process)
        raise argparse.ArgumentTypeError("expected a value without a NUL character")
    return text


# Without --hosts every rank runs on this host; beyond this many ranks per core a run is
# a typo (--world-sizes 100000), not a measurement (ranks on a 2-core machine: 1-4).
RANKS_PER_CORE_LIMIT = 4
_RESUME_KEEPS = ("preset", "backends", "workloads", "world_sizes", "name", "suite_args",
                 "data_dir", "order_seed", "profile", "launchers")
PROFILE_STEPS = 3  # run --profile: steps per throughput test under torch.profiler


def _check_run_args(args) -> None:
    """What `_run` does not refuse itself, before anything starts: options a resumed
    run would ignore, a --runs-dir that is not a directory, more ranks than this host
    holds without --hosts, a backend asked for by name that gets no cell."""
    import os

    if args.resume:
        ignored = [f"--{k.replace('_', '-')}" for k in _RESUME_KEEPS
                   if getattr(args, k) is not None]
        if ignored:
            raise CliError(f"--resume {args.resume}: {', '.join(ignored)} cannot change a "
                           "resumed run (it keeps its cells and options); drop "
                           f"{'it' if len(ignored) == 1 else 'them'}")
        return
    args.preset = args.preset or "quick"
    runs = Path(args.runs_dir)
    if runs.exists() and not runs.is_dir():
        raise CliError(f"--runs-dir {args.runs_dir}: not a directory")
    try:
        sizes = [int(x) for x in _csv(args.world_sizes) or []]
    except ValueError:
        return  # _run says so
    cores = os.cpu_count() or 1
    limit = RANKS_PER_CORE_LIMIT * cores
    if not args.hosts and sizes and max(sizes) > limit:
        raise CliError(f"--world-sizes {args.world_sizes}: {max(sizes)} ranks on this host "
                       f"({cores} cores; at most {limit} ranks without --hosts, which names "
                       "the machines and their slots)")
    from hvd_vs_ddp.backends import launchers

    for name in _csv(args.launchers) or []:
        launchers.get(name)  # UnknownName listing the known launchers
    backends = _csv(args.backends)
    if backends and sizes and min(sizes) >= 1:
        from hvd_vs_ddp.cli import matrix

        preset = matrix.preset(args.preset)
        if args.launchers:
            preset = dataclasses.replace(preset, launchers=tuple(_csv(args.launchers) or ()))
        cells = matrix.cells(preset, backends, sizes)
        under = f" under --launchers {args.launchers}" if args.launchers else ""
        for b in backends:
            if not any(c.backend == b for c in cells):
                raise CliError(f"--backends {b} at --world-sizes {args.world_sizes}: no cell "
                               f"({b} runs at world size 1 only)" if b in matrix.BASELINES
                               else f"--backends {b}: no cell at --world-sizes "
                               f"{args.world_sizes}{under}")


def _csv(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def _positive_int(flag: str, text: str | None) -> int | None:
    """An integer >= 1 (or None when not given); else one line naming the flag."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(value) != text.strip():
        raise CliError(f"{flag} {text!r}: expected an integer >= 1, e.g. {flag} 3")
    return value


def _run(args) -> int:
    from hvd_vs_ddp.backends import launchers, registry
    from hvd_vs_ddp.cli import matrix
    from hvd_vs_ddp.cli.runner import Progress, Runner
    from hvd_vs_ddp.harness import options
    from hvd_vs_ddp.results_schema import ResultsError, load_manifest
    from hvd_vs_ddp.workloads import registry as workloads

    _check_run_args(args)
    repeat = _positive_int("--repeat", args.repeat)
    seed = None
    if args.order_seed is not None:
        try:
            seed = int(args.order_seed)
        except ValueError:
            raise CliError(f"--order-seed {args.order_seed!r}: expected an integer") from None
    if args.resume:
        run_dir = Path(args.resume)
        manifest_path = run_dir / "manifest.json"
        if not manifest_path.is_file():
            raise CliError(f"--resume {run_dir}: no manifest.json there")
        try:
            manifest, _ = load_manifest(run_dir)
            if manifest.preset not in matrix.PRESETS:
                raise ResultsError(f"{manifest_path}: preset is {manifest.preset!r}; expected "
                                   f"one of {', '.join(matrix.PRESETS)}.")
            preset = matrix.PRESETS[manifest.preset]
            cells = [matrix.Cell.from_dict(c.to_dict()) for c in manifest.cells]
            chosen_workloads = manifest.workloads
            hosts = args.hosts or manifest.hosts
            if repeat is not None and repeat != (manifest.repeat or 1):
                raise CliError(f"--repeat {repeat}: {run_dir} was run with --repeat "
                               f"{manifest.repeat or 1}; a resumed run keeps its repetitions")
        except ResultsError as exc:
            raise CliError(f"--resume {run_dir}: manifest.json is not a readable "
                           f"hvd-vs-ddp manifest ({exc})") from None
    else:
        preset = matrix.preset(args.preset)
        backends = _csv(args.backends)
        for b in backends or []:
            registry.get(b)  # UnknownName listing the known backends
        chosen_workloads = _csv(args.workloads)
        for w in chosen_workloads or []:
            if w not in workloads.names():
                raise CliError(f"unknown workload {w!r}; known workloads: "
                               f"{', '.join(workloads.names())}")
        try:
            sizes = [int(x) for x in _csv(args.world_sizes) or []] or None
        except ValueError:
            raise CliError(f"--world-sizes {args.world_sizes!r}: expected integers like "
                           "1,2,4") from None
        if args.hosts:
            slots = sum(n for _, n in launchers.parse_hosts(args.hosts))
            biggest = max(sizes or preset.world_sizes)
            if slots < biggest:
                raise CliError(f"--hosts {args.hosts!r} has {slots} slots in all, fewer than "
                               f"the largest world size {biggest}")
        if args.launchers:  # only these launchers above one rank (names checked above)
            preset = dataclasses.replace(preset, launchers=tuple(_csv(args.launchers) or ()))
        # The suites' own option declarations check --suite-args before anything starts.
        given, rest = options.parse_argv(args.suite_args or "")
        if args.data_dir:
            given["data_dir"] = str(Path(args.data_dir).expanduser().resolve())
        if args.profile:  # --suite-args "--profile-steps N" says how many
            given.setdefault("profile_steps", PROFILE_STEPS)
        checked = preset.options.replace(**given)  # validates the values together
        extra = tuple(checked.to_argv(base=preset.options)) + tuple(rest)
        # The cells' own arguments (the tune preset's autotuned cells) come first.
        sized = dataclasses.replace(preset, workloads=tuple(chosen_workloads)) \
            if chosen_workloads else preset  # per-workload cells follow --workloads
        cells = [dataclasses.replace(c, pytest_args=c.pytest_args + extra)
                 for c in _runnable(matrix.cells(sized, backends, sizes), explicit=bool(backends))]
        matrix.check_recovery(cells, checked)  # each recovery cell's plan, before anything runs
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        name = matrix.check_name(args.name or f"{stamp}-{preset.name}")
        run_dir = Path(args.runs_dir) / name
        hosts = args.hosts
        if run_dir.exists():
            raise CliError(f"run directory {run_dir} already exists; choose another --name "
                           "or --resume it")
    runner = Runner(run_dir, preset, cells, sys.argv, args.cell_time_limit,
                    chosen_workloads, hosts=hosts, repeat=repeat, order_seed=seed)
    log.info(f"{len(cells)} cells -> {run_dir}")
    try:
        manifest = runner.run(Progress())
    except interrupt.Interrupted as stop:
        log.info(f"interrupted by {stop.name}; finished cells are in {run_dir} "
                 f"(resume with: hvd-vs-ddp run --resume {run_dir})")
        return stop.exit_code
    failed = [c for c in manifest.cells if c.status != "passed"]
    log.info(f"run finished: {len(cells) - len(failed)} passed, {len(failed)} failed "
             f"-> {run_dir}")
    print(run_dir)
    return 0 if not failed or args.allow_failures else 1


def _runnable(cells, explicit: bool):
    """Cells whose backend and launcher exist here. Asked for by name: an error if not;
    part of a preset: left out with a note."""
    from hvd_vs_ddp.backends import launchers, registry

    keep = []
    for cell in cells:
        why = None
        if cell.backend != "compute-only":
            avail = registry.availability(cell.backend)
            why = None if avail else f"{cell.backend}: {avail.reason}"
        if why is None:
            avail = launchers.available(cell.launcher)
            why = None if avail else f"{cell.id}: {avail.reason}"
        if why is None:
            keep.append(cell)
        elif explicit:
            raise CliError(f"{why}; see `hvd-vs-ddp doctor`")
        else:
            log.info(f"note: leaving out {cell.id} ({why})")
    return keep


def _report(args) -> int:
    from hvd_vs_ddp.reports import build_report
    from hvd_vs_ddp.reports.cost import check_epoch_samples, check_price

    try:
        margin = float(args.margin)
    except ValueError:
        margin = float("nan")
    if not 0 < margin < 1:
        raise CliError(f"--margin {args.margin!r}: expected a fraction between 0 and 1, "
                       "e.g. 0.05 for ±5%")
    try:
        price = check_price(args.price_per_device_hour)
        epoch = check_epoch_samples(args.epoch_samples)
    except ValueError as err:
        raise CliError(str(err)) from None
    paths = build_report([Path(p) for p in args.run_dirs], Path(args.output), margin,
                         keep_disturbed=args.keep_disturbed, price_per_device_hour=price,
                         epoch_samples=epoch)
    for p in (paths.html, paths.markdown, paths.verdicts):
        print(p)
    for line in paths.unreadable:
        print(f"hvd-vs-ddp: warning: unreadable, left out of the report: {one_line(line)}",
              file=sys.stderr)
    return EXIT_PARTIAL_REPORT if paths.unreadable else 0


def _project(args) -> int:
    from hvd_vs_ddp.projection.command import run as project

    return project(args)


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (`hvd-vs-ddp: error: ...`) and exit 2."""

    def error(self, message: str):
        where = self.prog.removeprefix("hvd-vs-ddp").strip()
        print(f"hvd-vs-ddp: error: {where + ': ' if where else ''}{one_line(message)}; "
              f"see `{self.prog} --help`", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def parser() -> argparse.ArgumentParser:
    ap = _OneLineParser(prog="hvd-vs-ddp", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    doc = sub.add_parser("doctor", help="what can run here, and why not")
    doc.add_argument("--selftest", action="store_true", help="run every path this machine "
                     "supports for a few steps; pass/fail/skip table, exit 1 on a failure")
    doc.add_argument("--only", type=_given, help="with --selftest: comma-separated check ids")
    doc.set_defaults(fn=_doctor)
    run = sub.add_parser("run", help="run a comparison matrix into a fresh run directory")
    run.add_argument("--preset", type=_given, help="quick (default), full or tune")
    run.add_argument("--backends", type=_given,
                     help="comma-separated subset of the preset's backends")
    run.add_argument("--workloads", type=_given, help="comma-separated workloads for throughput")
    run.add_argument("--world-sizes", type=_given, help="comma-separated world sizes, e.g. 1,2,4")
    run.add_argument("--name", type=_given, help="run directory name (default: <time>-<preset>)")
    run.add_argument("--runs-dir", type=_given, default="runs", help="where run directories go")
    run.add_argument("--resume", type=_given, metavar="RUN_DIR",
                     help="rerun the unfinished cells of RUN_DIR")
    run.add_argument("--cell-time-limit", type=_positive, default=1200.0,
                     help="seconds per cell before it is killed (default 1200)")
    run.add_argument("--suite-args", help="extra pytest arguments for every cell, quoted, "
                     "e.g. \"--rounds 3 --workload-param resnet50:image_size=224\"")
    run.add_argument("--data-dir", type=_given, help="a local ImageFolder or CIFAR-10 "
                     "folder: resnet50 trains on real images (throughput and convergence)")
    run.add_argument("--hosts", type=_given, help="hosts for mpirun/horovodrun, e.g. h1:4,h2:4")
    run.add_argument("--launchers", type=_given, help="comma-separated launchers for world "
                     "sizes above 1, e.g. torchrun,horovodrun-gloo (default: every one that "
                     "fits each backend)")
    run.add_argument("--repeat", help="repetitions per cell, each a fresh process, "
                     "interleaved across cells (default: the preset's; quick: 3)")
    run.add_argument("--order-seed", help="seed of the shuffled order of repetitions "
                     "(default: random; recorded in the manifest)")
    run.add_argument("--allow-failures", action="store_true",
                     help="exit 0 even when some cells failed")
    run.add_argument("--profile", action="store_true", default=None, help="after the timed "
                     f"rounds, {PROFILE_STEPS} more steps of each throughput test under "
                     "torch.profiler: one Chrome trace per rank beside the cell's results, "
                     "and the report's profiler ruler (never timed)")
    run.set_defaults(fn=_run)
    rep = sub.add_parser("report", help="HTML + Markdown report from run directories "
                         "(exit 3: written, but some cells' results were unreadable)")
    rep.add_argument("run_dirs", nargs="+", type=_given, metavar="RUN_DIR")
    rep.add_argument("-o", "--output", type=_given, required=True, help="the HTML file to write "
                     "(its .md and verdicts.json go beside it)")
    rep.add_argument("--margin", default="0.05", help="practical equivalence margin: "
                     "ratios within ±margin are 'equivalent' (default 0.05)")
    rep.add_argument("--keep-disturbed", action="store_true", help="keep the timings of "
                     "repetitions during which other processes used more than 10%% of "
                     "the host's cores (left out by default; the notes list them)")
    rep.add_argument("--price-per-device-hour", default=None, metavar="PRICE",
                     help="price of one device (a GPU; on a CPU machine a rank) for one "
                     "hour: the Cost section adds the cost per million samples")
    rep.add_argument("--epoch-samples", default="1281167", metavar="N",
                     help="samples per epoch for device-hours per epoch (default 1281167, "
                     "ImageNet-1k's training set)")
    rep.set_defaults(fn=_report)
    pro = sub.add_parser("project", help="predict each library on a cluster you do not have "
                         "(labelled a projection; docs/projection.md)")
    pro.add_argument("run_dir", nargs="?", type=_given, metavar="RUN_DIR",
                     help="the run to project from (or --compute-ms with --model)")
    pro.add_argument("--devices", type=_given, required=True,
                     help="comma-separated device counts to predict, e.g. 8,64,512")
    pro.add_argument("--devices-per-node", type=_given, help="devices per node (default 8)")
    pro.add_argument("--interconnect", type=_given, required=True, help="between nodes: a "
                     "row of `python -m hvd_vs_ddp.projection.interconnects` (ib-hdr, "
                     "roce-100g, ...), "
                     "or `measured` (the run's own allreduce fits)")
    pro.add_argument("--intra-node", type=_given, help="inside a node: nvlink1-5, pcie3-5 "
                     "(default nvlink4)")
    pro.add_argument("--nics-per-node", type=_given, help="NICs per node (default 1)")
    pro.add_argument("--algorithm", default="auto", help="allreduce algorithm: auto (the "
                     "faster of ring and tree, as NCCL picks), ring, tree, hierarchical")
    pro.add_argument("--workloads", type=_given, help="comma-separated workloads of the run")
    pro.add_argument("--compute-ms", type=_given, help="a published single-device step time "
                     "in ms, instead of a run")
    pro.add_argument("--model", type=_given, help="with --compute-ms: a torchvision "
                     "classifier or a workload of this project")
    pro.add_argument("--batch-size", type=_given, help="with --compute-ms: samples per "
                     "device per step (default 32)")
    pro.add_argument("--no-calibrate", action="store_true", help="leave out the calibration: "
                     "each library's step measured at the run's largest world size minus the "
                     "model's there, carried to every size (on by default)")
    pro.add_argument("--draws", type=_given, help="Monte Carlo draws for the bands "
                     "(default 400)")
    pro.add_argument("-o", "--output", type=_given, help="the JSON to write (default: "
                     "RUN_DIR/projection.json; with --compute-ms, none)")
    pro.set_defaults(fn=_project)
    return ap


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = parser().parse_args(argv)
    try:
        with interrupt.raising():  # SIGINT/SIGTERM/SIGHUP: clean up, exit 128 + signal
            return args.fn(args)
    except InputError as exc:  # one clear line for every input error
        print(f"hvd-vs-ddp: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:  # before or after a run's own handling
        stop = interrupt.as_interrupted(exc)
        print(f"hvd-vs-ddp: interrupted by {stop.name}", file=sys.stderr)
        return stop.exit_code
    except OSError as exc:  # a full disk, a file we may not write: one line, not a traceback
        if exc.errno is None:
            raise
        print(f"hvd-vs-ddp: error: {one_line(_os_error(exc))}", file=sys.stderr)
        return EXIT_WRITE_FAILED


def _os_error(exc: OSError) -> str:
    """'writing runs/x/manifest.json: No space left on device' (WriteError says it so),
    else 'PATH: REASON'."""
    from hvd_vs_ddp.results_schema import WriteError

    if isinstance(exc, WriteError) or not exc.filename:
        return " ".join(str(exc).split())
    return f"{exc.filename}: {exc.strerror}"


if __name__ == "__main__":
    sys.exit(main())

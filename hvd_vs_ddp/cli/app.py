"""The `hvd-vs-ddp` command: doctor, run (a comparison matrix), report and project.

    hvd-vs-ddp doctor                                  # what can run here, and why not
    hvd-vs-ddp doctor --selftest                       # ... and run it all, ~1 minute
    hvd-vs-ddp run --preset quick [--name NAME] [--runs-dir runs] [--repeat N]
    hvd-vs-ddp run --resume runs/<name>                # rerun unfinished/failed cells
    hvd-vs-ddp run --preset quick --budget 8           # settle open verdicts within 8 min
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

Bad input (unknown backend, workload or preset, a workload parameter out of its declared
range, a workload spec that does not import or build, a launcher that does not fit, a
corrupt manifest, an output that would replace an input: a run's files, another run's
report or projection, a file hvd-vs-ddp did not write) prints one line starting with
"hvd-vs-ddp: error:" and exits with code 2, changing nothing.

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
import errno
import sys
from pathlib import Path

from hvd_vs_ddp.cli import args as argtypes
from hvd_vs_ddp.cli.args import PROFILE_STEPS
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
        return selftest.main([f"--only={','.join(args.only)}"] if args.only else [])
    from hvd_vs_ddp.cli.doctor import report_lines

    print("\n".join(report_lines()))
    if args.pace:  # the host's pace spread over fresh processes (cli/pace_spread.py)
        from hvd_vs_ddp.cli import pace_spread

        print("\n".join(pace_spread.lines(args.pace, progress=lambda s: print(
            s, file=sys.stderr, flush=True))))
    return 0


def _run(args) -> int:
    from hvd_vs_ddp.cli import run_request
    from hvd_vs_ddp.cli.runner import Progress, Runner

    req = run_request.build(args)  # everything judged; nothing started, nothing written
    budget = getattr(args, "budget", None)
    if budget is not None and not req.run_dir.exists() and (
            req.repeat or req.preset.repeat) < 2:
        raise CliError(f"--budget {budget:g} needs --repeat 2 or more (with one repetition "
                       "the interval is within-run only and no look is valid)")
    runner = Runner(req.run_dir, req.preset, list(req.cells), sys.argv, req.cell_time_limit,
                    list(req.workloads) if req.workloads else None, hosts=req.hosts,
                    repeat=req.repeat, order_seed=req.order_seed, pythonpath=req.pythonpath,
                    budget_minutes=budget, plans=req.plans)
    if req.run_dir.exists():  # a resumed run: another runner of it is refused up front
        runner.lock.claim()
    log.info(f"{len(req.cells)} cell{'' if len(req.cells) == 1 else 's'} -> {req.run_dir}")
    from hvd_vs_ddp.cli.pace_spread import resolution_line
    from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN

    log.info(resolution_line(req.repeat or req.preset.repeat, DEFAULT_MARGIN))
    try:
        manifest = runner.run(Progress())
    except interrupt.Interrupted as stop:
        log.info(f"interrupted by {stop.name}; finished cells are in {req.run_dir} "
                 f"(resume with: hvd-vs-ddp run --resume {req.run_dir})")
        return stop.exit_code
    failed = [c for c in manifest.cells if c.status != "passed"]
    log.info(f"run finished: {len(req.cells) - len(failed)} passed, {len(failed)} failed "
             f"-> {req.run_dir}")
    print(req.run_dir)
    return 0 if not failed or req.allow_failures else 1


def _report(args) -> int:
    # A directory that holds no run is refused before the report's plotting stack loads
    # (pandas, seaborn, scipy: 1-3 s): the same line the report would give, at once.
    from hvd_vs_ddp.results_schema.files import load_manifest
    for run_dir in args.run_dirs:
        load_manifest(Path(run_dir))
    from hvd_vs_ddp.reports import build_report

    paths = build_report([Path(p) for p in args.run_dirs], Path(args.output), args.margin,
                         keep_disturbed=args.keep_disturbed,
                         price_per_device_hour=args.price_per_device_hour,
                         epoch_samples=args.epoch_samples)
    for p in (paths.html, paths.markdown, paths.verdicts):
        print(p)
    for line in paths.unreadable:
        print(f"hvd-vs-ddp: warning: unreadable, left out of the report: {one_line(line)}",
              file=sys.stderr)
    return EXIT_PARTIAL_REPORT if paths.unreadable else 0


def _project(args) -> int:
    if args.link_rate:  # two CPU hosts over a TCP link: a mode of its own
        from hvd_vs_ddp.projection.link_target import run as across_link

        return across_link(args)
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
    _add_doctor(sub)
    _add_run(sub)
    _add_report(sub)
    _add_project(sub)
    return ap


def _add_doctor(sub) -> None:
    doc = sub.add_parser("doctor", help="what can run here, and why not")
    doc.add_argument("--selftest", action="store_true", help="run every path this machine "
                     "supports for a few steps; pass/fail/skip table, exit 1 on a failure")
    doc.add_argument("--only", type=argtypes.check_ids, help="with --selftest: comma-separated "
                     "check ids")
    doc.add_argument("--pace", type=argtypes.count, default=0, metavar="N",
                     help="also time the pace probe in N fresh processes (a few seconds "
                     "each): how far apart this host runs them, and the difference a run's "
                     "repetitions can resolve here (kept for `run` to say)")
    doc.set_defaults(fn=_doctor)


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="run a comparison matrix into a fresh run directory")
    run.add_argument("--preset", type=argtypes.preset,
                     help="quick (default), full, tune, compile, recovery, aa (the A/A "
                     "check: each backend against itself) or links (across emulated hosts at "
                     "several link rates, as root: docs/links.md); docs/running.md says "
                     "what each runs")
    run.add_argument("--backends", type=argtypes.backends,
                     help="comma-separated subset of the preset's backends")
    run.add_argument("--workloads", type=argtypes.workloads,
                     help="comma-separated workloads for throughput")
    run.add_argument("--world-sizes", type=argtypes.world_sizes,
                     help="comma-separated world sizes, e.g. 1,2,4")
    run.add_argument("--name", type=argtypes.given,
                     help="run directory name (default: <time>-<preset>)")
    run.add_argument("--runs-dir", type=argtypes.given, default="runs",
                     help="where run directories go")
    run.add_argument("--resume", type=argtypes.given, metavar="RUN_DIR",
                     help="rerun the unfinished cells of RUN_DIR")
    run.add_argument("--cell-time-limit", type=argtypes.seconds, default=1200.0,
                     help="seconds per cell before it is killed (default 1200)")
    run.add_argument("--suite-args", help="extra pytest arguments for every cell, quoted, "
                     "e.g. \"--rounds 3 --workload-param resnet50:image_size=224\"")
    run.add_argument("--data-dir", type=argtypes.given, help="a local ImageFolder or CIFAR-10 "
                     "folder: resnet50 trains on real images (throughput and convergence)")
    run.add_argument("--hosts", type=argtypes.given,
                     help="hosts for mpirun/horovodrun, e.g. h1:4,h2:4")
    run.add_argument("--emulate-hosts", type=argtypes.emulated_hosts, metavar="2",
                     help="run each 2-rank cell across 2 emulated hosts (network namespaces "
                     "on this machine, one rank each; needs root) joined by a link of each "
                     "--link-rate (docs/links.md)")
    run.add_argument("--link-rate", type=argtypes.link_rates, help="with --emulate-hosts: "
                     "comma-separated rates of the link between the hosts, an axis of the "
                     "matrix; loopback is today's one-host cell, e.g. loopback,500mbit,1gbit")
    run.add_argument("--launchers", type=argtypes.launchers, help="comma-separated launchers "
                     "for world sizes above 1, e.g. torchrun,horovodrun-gloo (default: "
                     "every one that fits each backend)")
    run.add_argument("--suites", type=argtypes.suites, help="comma-separated suites of the "
                     "preset to run, e.g. throughput,compute (default: all of them; "
                     "'compute' brings the compute-only reference cells, 'timeline' the "
                     "instrumented Horovod twins)")
    run.add_argument("--input", type=argtypes.inputs, help="comma-separated input modes of "
                     "the timed cells, an axis of the matrix: device (a few ready batches on "
                     "the device: no input work in the step; the default), memory (tensors "
                     "through a DataLoader; on a GPU pinned, copied on a side stream), jpeg "
                     "(JPEG files decoded and augmented on the host by DataLoader workers: "
                     "--suite-args \"--loader-workers N --pin-memory on|off\"), e.g. "
                     "device,jpeg")
    run.add_argument("--repeat", type=argtypes.repetitions, help="repetitions per cell, each "
                     "a fresh process, interleaved across cells (default: the preset's; "
                     "quick: 3; at most 1000)")
    run.add_argument("--order-seed", type=argtypes.integer, help="seed of the shuffled order of "
                     "repetitions (default: random; recorded in the manifest)")
    run.add_argument("--budget", type=argtypes.minutes, metavar="MINUTES", help="after the "
                     "planned repetitions, add interleaved repetitions to the pairs whose "
                     "verdicts are inconclusive until all are settled or MINUTES (wall "
                     "clock, the whole run) are spent; sequential intervals "
                     "(docs/methodology.md); with --resume: a new total")
    run.add_argument("--allow-failures", action="store_true",
                     help="exit 0 even when some cells failed")
    run.add_argument("--profile", action="store_true", default=None, help="after the timed "
                     f"rounds, {PROFILE_STEPS} more steps of each throughput test under "
                     "torch.profiler: one Chrome trace per rank beside the cell's results, "
                     "and the report's profiler ruler (never timed)")
    run.set_defaults(fn=_run)


def _add_report(sub) -> None:
    rep = sub.add_parser("report", help="HTML + Markdown report from run directories "
                         "(exit 3: written, but some cells' results were unreadable)")
    rep.add_argument("run_dirs", nargs="+", type=argtypes.given, metavar="RUN_DIR")
    rep.add_argument("-o", "--output", type=argtypes.given, required=True, help="the HTML file "
                     "to write (its .md and verdicts.json go beside it)")
    rep.add_argument("--margin", type=argtypes.fraction, default=0.05, help="practical "
                     "equivalence margin: ratios within ±margin are 'equivalent' "
                     "(default 0.05)")
    rep.add_argument("--keep-disturbed", action="store_true", help="keep the timings of "
                     "repetitions during which other processes used more than 10%% of "
                     "the host's cores (left out by default; the notes list them)")
    rep.add_argument("--price-per-device-hour", type=argtypes.price, default=None,
                     metavar="PRICE", help="price of one device (a GPU; on a CPU machine a "
                     "rank) for one hour: the Cost section adds the cost per million samples")
    rep.add_argument("--epoch-samples", type=argtypes.epoch_samples, default=1281167,
                     metavar="N", help="samples per epoch for device-hours per epoch "
                     "(default 1281167, ImageNet-1k's training set)")
    rep.set_defaults(fn=_report)


def _add_project(sub) -> None:
    from hvd_vs_ddp.projection.collectives import ALGORITHMS
    from hvd_vs_ddp.projection.terms import CONTROLLERS

    pro = sub.add_parser("project", help="predict each library on a cluster you do not have "
                         "(labelled a projection; docs/projection.md)")
    pro.add_argument("run_dir", nargs="?", type=argtypes.given, metavar="RUN_DIR",
                     help="the run to project from (or --compute-ms with --model)")
    pro.add_argument("--devices", type=argtypes.devices,
                     help="comma-separated device counts to predict, e.g. 8,64,512 "
                     "(needed but with --link-rate)")
    pro.add_argument("--link-rate", type=argtypes.link_rates, help="instead of a cluster: "
                     "two CPU hosts, one rank each, joined by TCP at each of these "
                     "comma-separated rates, e.g. 500mbit,1gbit, projected from RUN_DIR's "
                     "2-rank cells and printed (docs/links.md)")
    pro.add_argument("--devices-per-node", type=argtypes.count, default=8,
                     help="devices per node (default 8)")
    pro.add_argument("--interconnect", type=argtypes.given, help="between nodes (needed "
                     "where a size spans nodes): a row of `python -m "
                     "hvd_vs_ddp.projection.interconnects` "
                     "(ib-hdr, roce-100g, ...), or `measured` (the run's own allreduce fits)")
    pro.add_argument("--intra-node", type=argtypes.given, help="inside a node: nvlink1-5, "
                     "pcie3-5 (default nvlink4)")
    pro.add_argument("--nics-per-node", type=argtypes.count, default=1,
                     help="NICs per node (default 1)")
    pro.add_argument("--algorithm", default="auto", choices=ALGORITHMS, help="allreduce "
                     "algorithm: auto (the faster of ring and tree, as NCCL picks), ring, "
                     "tree, hierarchical")
    pro.add_argument("--workloads", type=argtypes.workloads_of_a_run,
                     help="comma-separated workloads of the run")
    pro.add_argument("--compute-ms", type=argtypes.milliseconds, help="a published "
                     "single-device step time in ms, instead of a run")
    pro.add_argument("--model", type=argtypes.given, help="with --compute-ms: a torchvision "
                     "classifier, a published transformer (bert-large, gpt2, ...: "
                     "hvd_vs_ddp/projection/architectures.py) or a workload of this project")
    pro.add_argument("--batch-size", type=argtypes.count, help="with --compute-ms: samples "
                     "per device per step (default 32)")
    pro.add_argument("--no-calibrate", action="store_true", help="leave out the "
                     "calibration: each library's step measured at the run's largest world "
                     "size minus the model's there, carried to every size (on by default)")
    pro.add_argument("--controller", default="mpi", choices=CONTROLLERS, help="Horovod's CPU "
                     "controller on the target: mpi (default) or gloo (its negotiation each "
                     "cycle)")
    pro.add_argument("--margin", type=argtypes.fraction, default=None, help="the verdicts' "
                     "practical margin (default 0.05, as the report's)")
    pro.add_argument("--draws", type=argtypes.draws, default=400,
                     help="Monte Carlo draws for the bands (default 400)")
    pro.add_argument("-o", "--output", type=argtypes.given, help="the JSON to write (default: "
                     "RUN_DIR/projection.json; with --compute-ms, none)")
    # the input pipeline on the host, where the run did not measure it
    pro.add_argument("--loader-cpu-ms", type=argtypes.milliseconds, help="the host input "
                     "pipeline: CPU ms its DataLoader workers spend on one batch of one rank "
                     "(decode and augment), measured elsewhere")
    pro.add_argument("--loader-workers", type=argtypes.count, help="with --loader-cpu-ms: "
                     "DataLoader workers per rank (default 4)")
    pro.add_argument("--host-cores", type=argtypes.count, help="CPU cores per node of the "
                     "target (default: the run's host; with --compute-ms, 8 per device)")
    pro.add_argument("--input-on-device", action="store_true", help="the input does not "
                     "load on the host (tensors in memory, or decoded on the GPU): the "
                     "verdicts need no host pipeline measurement")
    pro.add_argument("--optimizer", choices=("foreach", "loop"), default="foreach",
                     help="the optimizer's implementation on the target: foreach (torch's "
                     "multi-tensor kernels, its default on CUDA since 2.0) or loop (one "
                     "kernel launch or more per parameter: torch < 2.0, foreach=False); "
                     "sets Horovod's exposed host tail (docs/projection.md)")
    pro.set_defaults(fn=_project)


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
        # a path given longer than the file system allows is the input's fault
        return EXIT_BAD_INPUT if exc.errno == errno.ENAMETOOLONG else EXIT_WRITE_FAILED


def _os_error(exc: OSError) -> str:
    """'writing runs/x/manifest.json: No space left on device' (WriteError says it so),
    else 'PATH: REASON'."""
    from hvd_vs_ddp.results_schema import WriteError

    if isinstance(exc, WriteError) or not exc.filename:
        return " ".join(str(exc).split())
    return f"{exc.filename}: {exc.strerror}"


if __name__ == "__main__":
    sys.exit(main())

"""The `hvd-vs-ddp` command: doctor, run (a comparison matrix) and report.

    hvd-vs-ddp doctor                                  # what can run here, and why not
    hvd-vs-ddp doctor --selftest                       # ... and run it all, ~1 minute
    hvd-vs-ddp run --preset quick [--name NAME] [--runs-dir runs]
    hvd-vs-ddp run --resume runs/<name>                # rerun unfinished/failed cells
    hvd-vs-ddp report runs/<name> [runs/<other>] -o reports-out/<name>/report.html

Bad input (unknown backend, workload or preset, a launcher that does not fit, a
corrupt results file, an output path inside a results directory) prints one
line starting with "hvd-vs-ddp: error:" and exits with code 2, changing nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shlex
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


class CliError(Exception):
    pass


def _doctor(args) -> int:
    if args.only and not args.selftest:
        raise CliError("--only selects selftest checks; use it with --selftest")
    if args.selftest:  # real processes on every path this machine supports
        from hvd_vs_ddp import selftest
        return selftest.main([f"--only={args.only}"] if args.only else [])
    from hvd_vs_ddp.doctor import report_lines

    print("\n".join(report_lines()))
    return 0


def _csv(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def _run(args) -> int:
    from backends import registry
    from hvd_vs_ddp import matrix
    from hvd_vs_ddp.runner import Progress, Runner
    from workloads import registry as workloads

    if args.resume:
        run_dir = Path(args.resume)
        manifest_path = run_dir / "manifest.json"
        if not manifest_path.is_file():
            raise CliError(f"--resume {run_dir}: no manifest.json there")
        try:
            manifest = json.loads(manifest_path.read_text())
            preset = matrix.PRESETS[manifest["preset"]]
            cells = [matrix.Cell.from_dict(c) for c in manifest["cells"]]
            chosen_workloads = manifest.get("workloads")
            hosts = args.hosts or manifest.get("hosts")
        except (ValueError, KeyError, TypeError) as exc:
            raise CliError(f"--resume {run_dir}: manifest.json is not a readable "
                           f"hvd-vs-ddp manifest ({exc})") from None
    else:
        if args.preset not in matrix.PRESETS:
            raise CliError(f"unknown preset {args.preset!r}; known presets: "
                           f"{', '.join(matrix.PRESETS)}")
        preset = matrix.PRESETS[args.preset]
        backends = _csv(args.backends)
        for b in backends or []:
            registry.get(b)  # raises UnknownBackend listing the known names
        chosen_workloads = _csv(args.workloads)
        for w in chosen_workloads or []:
            if w not in workloads.names():
                raise CliError(f"unknown workload {w!r}; known workloads: "
                               f"{', '.join(workloads.names())}")
        try:
            sizes = [int(x) for x in _csv(args.world_sizes) or []] or None
        except ValueError:
            raise CliError(f"--world-sizes {args.world_sizes!r}: expected integers like 1,2,4") from None
        extra = tuple(shlex.split(args.suite_args or ""))
        if args.data_dir:
            data_dir = Path(args.data_dir).expanduser()
            if not data_dir.is_dir():
                raise CliError(f"--data-dir {args.data_dir}: no such directory")
            extra += ("--data-dir", str(data_dir.resolve()))
        cells = [dataclasses.replace(c, pytest_args=extra)
                 for c in _runnable(matrix.cells(preset, backends, sizes), explicit=bool(backends))]
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        name = matrix.check_name(args.name or f"{stamp}-{preset.name}")
        run_dir = Path(args.runs_dir) / name
        hosts = args.hosts
        if run_dir.exists():
            raise CliError(f"run directory {run_dir} already exists; choose another --name "
                           "or --resume it")
    runner = Runner(run_dir, preset, cells, sys.argv, args.cell_time_limit,
                    chosen_workloads, hosts=hosts)
    print(f"hvd-vs-ddp: {len(cells)} cells -> {run_dir}", file=sys.stderr)
    try:
        manifest = runner.run(Progress())
    except KeyboardInterrupt:
        print(f"hvd-vs-ddp: interrupted; finished cells are in {run_dir} "
              f"(resume with: hvd-vs-ddp run --resume {run_dir})", file=sys.stderr)
        return 130
    failed = [c for c in manifest["cells"] if c["status"] != "passed"]
    print(f"hvd-vs-ddp: run finished: {len(cells) - len(failed)} passed, {len(failed)} "
          f"failed -> {run_dir}", file=sys.stderr)
    print(run_dir)
    return 0 if not failed or args.allow_failures else 1


def _runnable(cells, explicit: bool):
    """Cells whose backend and launcher exist here. Asked for by name: an error if not;
    part of a preset: left out with a note."""
    from backends import registry
    from hvd_vs_ddp import launchers

    keep = []
    for cell in cells:
        why = None
        if cell.backend != "compute-only":
            avail = registry.availability(cell.backend)
            why = None if avail else f"{cell.backend}: {avail.reason}"
        if why is None:
            ok, reason = launchers.available(cell.launcher)
            why = None if ok else f"{cell.id}: {reason}"
        if why is None:
            keep.append(cell)
        elif explicit:
            raise CliError(f"{why}; see `hvd-vs-ddp doctor`")
        else:
            print(f"hvd-vs-ddp: note: leaving out {cell.id} ({why})", file=sys.stderr)
    return keep


def _report(args) -> int:
    from reports import build_report

    paths = build_report([Path(p) for p in args.run_dirs], Path(args.output))
    for p in (paths.html, paths.markdown):
        print(p)
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="hvd-vs-ddp", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    doc = sub.add_parser("doctor", help="what can run here, and why not")
    doc.add_argument("--selftest", action="store_true", help="run every path this machine "
                     "supports for a few steps; pass/fail/skip table, exit 1 on a failure")
    doc.add_argument("--only", help="with --selftest: comma-separated check ids")
    doc.set_defaults(fn=_doctor)
    run = sub.add_parser("run", help="run a comparison matrix into a fresh run directory")
    run.add_argument("--preset", default="quick", help="quick (default) or full")
    run.add_argument("--backends", help="comma-separated subset of the preset's backends")
    run.add_argument("--workloads", help="comma-separated workloads for throughput")
    run.add_argument("--world-sizes", help="comma-separated world sizes, e.g. 1,2,4")
    run.add_argument("--name", help="run directory name (default: <time>-<preset>)")
    run.add_argument("--runs-dir", default="runs", help="where run directories go")
    run.add_argument("--resume", metavar="RUN_DIR", help="rerun the unfinished cells of RUN_DIR")
    run.add_argument("--cell-time-limit", type=float, default=1200.0,
                     help="seconds per cell before it is killed (default 1200)")
    run.add_argument("--suite-args", help="extra pytest arguments for every cell, quoted, "
                     "e.g. \"--rounds 3 --workload-param resnet50:image_size=224\"")
    run.add_argument("--data-dir", help="a local ImageFolder or CIFAR-10 folder: resnet50 "
                     "trains on real images (throughput and convergence)")
    run.add_argument("--hosts", help="hosts for mpirun/horovodrun, e.g. h1:4,h2:4")
    run.add_argument("--allow-failures", action="store_true",
                     help="exit 0 even when some cells failed")
    run.set_defaults(fn=_run)
    rep = sub.add_parser("report", help="HTML + Markdown report from run directories")
    rep.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    rep.add_argument("-o", "--output", required=True, help="the HTML file to write")
    rep.set_defaults(fn=_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except Exception as exc:  # one clear line for every input error we know of
        if _is_input_error(exc):
            print(f"hvd-vs-ddp: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        raise


def _is_input_error(exc: Exception) -> bool:
    from backends.registry import UnknownBackend
    from hvd_vs_ddp.matrix import MatrixError

    kinds: tuple[type[BaseException], ...] = (CliError, UnknownBackend, MatrixError)
    try:
        from reports import ReportError
        kinds += (ReportError,)
    except ImportError:
        pass
    return isinstance(exc, kinds)


if __name__ == "__main__":
    sys.exit(main())

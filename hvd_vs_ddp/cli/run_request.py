"""`hvd-vs-ddp run`, judged once: the parsed options -> one frozen RunRequest.

argparse has already parsed every value into its type (hvd_vs_ddp/cli/args.py); this
module judges what needs several of them together, in named steps, and builds the
matrix once: a resumed run's manifest, the run directory, how many ranks fit this host
without --hosts, the suites' own options (--suite-args, checked by their declarations),
which cells the preset and the choices give, each judged once (can it run here, and if
not why: hvd_vs_ddp/harness/cell_verdict.py, asked by the matrix as it lays them out),
whether each backend asked for by name gets a cell and can run here, each recovery cell's
trial plan (hvd_vs_ddp/recovery/plan.py:
min world, kill step, a global batch every world size it may run at divides), and every
workload the cells will train, built with its parameters on the meta device with one
forward step (hvd_vs_ddp/workloads/check.py: a spec that does not import, a model that
cannot be built or refuses its input, a data set smaller than a batch per rank).
Whatever it refuses is one InputError line, before any process starts or any file is
written; what it returns is what the runner runs: its cells, and each cell's plan
(hvd_vs_ddp/harness/cell_plan.py, built from the cell's verdict, judging nothing again),
which the runner only writes for the cell's ranks.

    request = run_request.build(args)      # args: the parser's namespace
    Runner(request.run_dir, request.preset, list(request.cells), ..., plans=request.plans)
"""
from __future__ import annotations

import dataclasses
import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from hvd_vs_ddp.cli import cell_command, gpu_sizes, matrix, presets
from hvd_vs_ddp.cli.args import PROFILE_STEPS
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.presets import Preset
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.harness.cell_plan import CellPlan
from hvd_vs_ddp.harness.cell_verdict import MISSING, Verdict

# Without --hosts every rank runs on this host; beyond this many ranks per core a run is
# a typo (--world-sizes 100000), not a measurement (ranks on a 2-core machine: 1-4).
RANKS_PER_CORE_LIMIT = 4
# What a resumed run keeps from its manifest: giving any of these with --resume is refused.
RESUME_KEEPS = ("preset", "backends", "workloads", "world_sizes", "name", "suite_args",
                "data_dir", "order_seed", "profile", "launchers", "suites", "input",
                "emulate_hosts", "link_rate")


class RunRequestError(InputError):
    pass


@dataclass(frozen=True)
class RunRequest:
    """Everything `run` needs, checked: the runner only runs it."""

    run_dir: Path
    preset: Preset
    cells: tuple[Cell, ...]
    workloads: tuple[str, ...] | None  # --workloads (None: the preset's)
    hosts: str | None
    repeat: int | None                 # None: the preset's
    order_seed: int | None             # None: drawn at random and recorded
    cell_time_limit: float
    allow_failures: bool
    resumed: bool = False
    pythonpath: tuple[str, ...] = ()   # folders of external workload modules, for the ranks
    plans: Mapping[str, CellPlan] = field(default_factory=dict)  # cell id -> its plan


def build(args: Any) -> RunRequest:
    return _resumed(args) if args.resume else _fresh(args)


# -- a resumed run -----------------------------------------------------------
def _resumed(args: Any) -> RunRequest:
    from hvd_vs_ddp.results_schema import ResultsError, load_manifest

    given = [f"--{k.replace('_', '-')}" for k in RESUME_KEEPS
             if getattr(args, k, None) is not None]
    if given:
        raise RunRequestError(f"--resume {args.resume}: {', '.join(given)} cannot change a "
                              "resumed run (it keeps its cells and options); drop "
                              f"{'it' if len(given) == 1 else 'them'}")
    run_dir = Path(args.resume)
    if not RunFolder(run_dir).is_run():
        raise RunRequestError(f"--resume {run_dir}: no manifest.json there")
    try:
        manifest, _ = load_manifest(run_dir)
    except ResultsError as exc:
        raise RunRequestError(f"--resume {run_dir}: manifest.json is not a readable "
                              f"hvd-vs-ddp manifest ({exc})") from None
    if manifest.preset not in presets.PRESETS:
        raise RunRequestError(f"--resume {run_dir}: manifest.json is not a readable "
                              f"hvd-vs-ddp manifest ({RunFolder(run_dir).manifest}: preset is "
                              f"{manifest.preset!r}; expected one of "
                              f"{', '.join(presets.PRESETS)}.)")
    if args.repeat is not None and args.repeat != (manifest.repeat or 1):
        raise RunRequestError(f"--repeat {args.repeat}: {run_dir} was run with --repeat "
                              f"{manifest.repeat or 1}; a resumed run keeps its repetitions")
    cells = tuple(Cell.from_dict(c.to_dict()) for c in manifest.cells)
    _check_emulation(cells)  # its emulated hosts must still be possible here
    preset = _sized(presets.PRESETS[manifest.preset], manifest_sizes(manifest))
    try:  # the run's workloads must still resolve and build (a spec file moved?)
        from hvd_vs_ddp.harness import option_parsing

        kept, _ = option_parsing.parse_argv(list(cells[0].pytest_args) if cells else [])
        opts = preset.options.replace(**kept)
        sizes = [c.world_size for c in cells] or [1]
        path = _check_workloads(list(manifest.workloads or preset.workloads), opts,
                                max(sizes), preset, cells)
        hosts = args.hosts or manifest.hosts
        workloads = tuple(manifest.workloads) if manifest.workloads else None
        # its cells as they were laid out, each judged once more here (this machine now)
        verdicts = matrix.judge_again(cells, preset, hosts)
        plans = _plans(cells, verdicts, preset, workloads, run_dir, hosts,
                       args.cell_time_limit)
    except InputError as exc:
        raise RunRequestError(f"--resume {run_dir}: {exc}") from None
    return RunRequest(run_dir, preset, cells, workloads, hosts, args.repeat, None,
                      args.cell_time_limit, args.allow_failures, resumed=True,
                      pythonpath=path, plans=plans)


# -- a fresh run -------------------------------------------------------------
def _fresh(args: Any) -> RunRequest:
    preset = presets.preset(args.preset or "quick")
    if args.launchers:  # only these launchers above one rank, named ones never left out
        preset = dataclasses.replace(preset, launchers=args.launchers, without_launchers=tuple(
            la for la in preset.without_launchers if la not in args.launchers))
    if args.suites:
        preset = _only_suites(preset, args.suites)
    if getattr(args, "input", None):  # the input-pipeline axis (matrix.with_inputs)
        preset = dataclasses.replace(preset, inputs=args.input)
    preset = _linked(preset, args)  # run --emulate-hosts 2 --link-rate (hvd_vs_ddp/links/)
    preset = _sized(preset, args.world_sizes or preset.world_sizes)
    _check_runs_dir(args.runs_dir)
    _check_host_capacity(args.world_sizes, args.hosts)
    extra, opts = _suite_extra(args, preset)
    cells, verdicts = _cells(args, preset, extra)
    matrix.check_recovery(cells, opts)  # each recovery cell's plan (hvd_vs_ddp/recovery/)
    _check_linked(preset, cells)
    _check_hosts(args.hosts, args.world_sizes or preset.world_sizes)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = matrix.check_name(args.name or f"{stamp}-{preset.name}")
    run_dir = Path(args.runs_dir) / name
    if run_dir.exists():
        raise RunRequestError(f"run directory {run_dir} already exists; choose another "
                              "--name or --resume it")
    _check_place(run_dir)
    sizes = [c.world_size for c in cells] or [1]
    path = _check_workloads(list(args.workloads or preset.workloads), opts, max(sizes),
                            preset, cells)
    plans = _plans(cells, verdicts, preset, args.workloads, run_dir, args.hosts,
                   args.cell_time_limit)
    return RunRequest(run_dir, preset, cells, args.workloads, args.hosts, args.repeat,
                      args.order_seed, args.cell_time_limit, args.allow_failures,
                      pythonpath=path, plans=plans)


def _sized(preset: Preset, world_sizes) -> Preset:
    """On a machine with GPUs, the preset at the sizes a GPU user trains
    (hvd_vs_ddp/cli/gpu_sizes.py); unchanged on the CPU."""
    gpus = matrix._gpus()
    if not gpus:
        return preset
    return gpu_sizes.apply(preset, gpus, gpu_sizes.smallest_gpu_gib(), tuple(world_sizes))


def manifest_sizes(manifest) -> tuple[int, ...]:
    """The world sizes of a run's cells (a resumed run is sized as it was laid out)."""
    return tuple(sorted({int(c.world_size) for c in manifest.cells})) or (1,)


def _plans(cells: tuple[Cell, ...], verdicts: Mapping[str, Verdict], preset: Preset,
           workloads: tuple[str, ...] | None, run_dir: Path, hosts: str | None,
           time_limit: float) -> dict[str, CellPlan]:
    """Each cell's plan, built once from its options and its verdict (judged once, when
    the matrix was laid out): the runner writes it, judging nothing again."""
    where = str(run_dir.resolve())
    chosen = list(workloads) if workloads else None
    return {c.id: cell_command.plan(
                c, cell_command.cell_options(c, preset, chosen, run_dir=where),
                hosts, time_limit, verdict=verdicts[c.id]) for c in cells}


def _linked(preset: Preset, args: Any) -> Preset:
    """The preset with the links of --link-rate (matrix.with_links); emulated hosts need
    both options, no --hosts, and root with iproute2 (one line otherwise, before any
    cell starts)."""
    from hvd_vs_ddp.links import rates

    n, links = getattr(args, "emulate_hosts", None), getattr(args, "link_rate", None)
    if links and not n:
        raise RunRequestError(f"--link-rate {','.join(links)}: the link joins emulated hosts; "
                              "add --emulate-hosts 2")
    if n and not (links or preset.links):
        raise RunRequestError(f"--emulate-hosts {n}: name the link's rates, e.g. "
                              "--link-rate loopback,1gbit")
    if links:
        preset = dataclasses.replace(preset, links=links)
    if any(rates.emulated(k) for k in preset.links):
        if args.hosts:
            raise RunRequestError(f"--hosts {args.hosts}: the emulated hosts of "
                                  "--emulate-hosts or the --preset links are this machine's; "
                                  "give one or the other")
        from hvd_vs_ddp.links import hosts

        hosts.check()  # root, ip, tc, unshare: one line, before anything else is judged
    return preset


def _check_emulation(cells: tuple[Cell, ...]) -> None:
    """Cells across emulated hosts can run here (root, ip, tc, unshare) or one line."""
    from hvd_vs_ddp.links import hosts, rates

    if any(rates.emulated(c.link) for c in cells):
        hosts.check()


def _check_linked(preset: Preset, cells: tuple[Cell, ...]) -> None:
    """A run asked for emulated links gets at least one cell across them (one line
    otherwise)."""
    from hvd_vs_ddp.links import rates

    asked = [k for k in preset.links if rates.emulated(k)]
    if asked and not any(rates.emulated(c.link) for c in cells):
        raise RunRequestError(
            f"--link-rate {','.join(preset.links)}: no cell crosses the emulated hosts (they "
            f"take a distributed backend at {matrix.EMULATED_HOSTS} ranks under "
            f"{', '.join(matrix.LINK_LAUNCHERS)}, timing its throughput)")


def _only_suites(preset: Preset, chosen: tuple[str, ...]) -> Preset:
    """The preset with only the `chosen` of its suites: 'compute' keeps the compute-only
    reference cells, 'timeline' the instrumented Horovod twins (when the preset has
    them), and at least one suite that trains must remain for them to refer to."""
    has = [*preset.suites, *(["timeline"] if preset.timeline else [])]
    foreign = [s for s in chosen if s not in has]
    if foreign:
        raise RunRequestError(f"--suites {','.join(chosen)}: the {preset.name} preset has no "
                              f"{', '.join(foreign)} suite; it has {', '.join(has)}")
    kept = tuple(s for s in preset.suites if s in chosen)
    if not [s for s in kept if s != "compute"]:
        raise RunRequestError(f"--suites {','.join(chosen)}: name at least one suite that "
                              "trains ('compute' and 'timeline' are references for the "
                              f"others); the {preset.name} preset has "
                              f"{', '.join(s for s in preset.suites if s != 'compute')}")
    return dataclasses.replace(preset, suites=kept,
                               timeline=preset.timeline and "timeline" in chosen)


def _check_runs_dir(runs_dir: str) -> None:
    """The runs folder, or the nearest folder above it that exists, must be a folder this
    process may write into: judged here, before the plan is announced."""
    runs = Path(runs_dir)
    if runs.exists() and not runs.is_dir():
        raise RunRequestError(f"--runs-dir {runs_dir}: not a directory")
    place = runs.absolute()
    while not place.exists() and place != place.parent:
        place = place.parent
    if not place.is_dir():
        raise RunRequestError(f"--runs-dir {runs_dir}: {place} is not a directory")
    if not os.access(place, os.W_OK | os.X_OK):
        raise RunRequestError(f"--runs-dir {runs_dir}: {place} is not writable")
    from hvd_vs_ddp.common import outputs

    why = outputs.cannot_make_folders_in(place)
    if why:
        raise RunRequestError(f"--runs-dir {runs_dir}: {place} is not writable ({why})")


def _check_place(run_dir: Path) -> None:
    """A new run directory never lies inside another run's (its cells/ or logs/): the
    output gate (hvd_vs_ddp/common/outputs.py), asked up front for the manifest the run
    will write first, as the run's own."""
    from hvd_vs_ddp.common import output_formats, outputs

    run = RunFolder(run_dir)
    try:
        run.check((run.manifest, output_formats.RUN_MANIFEST))
    except outputs.OutputRefused as exc:
        raise RunRequestError(f"--runs-dir/--name: {exc}") from None


def _check_host_capacity(sizes: tuple[int, ...] | None, hosts: str | None) -> None:
    cores = os.cpu_count() or 1
    limit = RANKS_PER_CORE_LIMIT * cores
    if not hosts and sizes and max(sizes) > limit:
        raise RunRequestError(
            f"--world-sizes {','.join(map(str, sizes))}: {max(sizes)} ranks on this host "
            f"({cores} cores; at most {limit} ranks without --hosts, which names the "
            "machines and their slots)")


def _check_hosts(hosts: str | None, sizes: tuple[int, ...]) -> None:
    if not hosts:
        return
    from hvd_vs_ddp.backends import launchers

    slots = sum(n for _, n in launchers.parse_hosts(hosts))
    if slots < max(sizes):
        raise RunRequestError(f"--hosts {hosts!r} has {slots} slots in all, fewer than the "
                              f"largest world size {max(sizes)}")


def _suite_extra(args: Any, preset: Preset) -> tuple[tuple[str, ...], Any]:
    """The suites' arguments every cell gets: --suite-args, --data-dir and --profile,
    checked by the suites' own option declarations (hvd_vs_ddp/harness/option_parsing.py); and
    the options they make (SuiteOptions)."""
    from hvd_vs_ddp.harness import option_parsing

    given, rest = option_parsing.parse_argv(args.suite_args or "")
    option_parsing.refuse_per_cell(given)
    if args.data_dir:
        given["data_dir"] = str(Path(args.data_dir).expanduser().resolve())
    if args.profile:  # --suite-args "--profile-steps N" says how many
        given.setdefault("profile_steps", PROFILE_STEPS)
    checked = preset.options.replace(**given)  # validates the values together
    if preset.inputs != checked.input:  # --input jpeg: a workload it can feed (one line)
        trained = checked.workloads if checked.workloads != preset.options.workloads \
            else tuple(args.workloads or preset.workloads)  # --suite-args --workloads wins
        checked.replace(input=preset.inputs, workloads=trained)
    return tuple(checked.to_argv(base=preset.options)) + tuple(rest), checked


def _check_workloads(names: list[str], opts: Any, world_size: int,
                     preset: Preset, cells: tuple[Cell, ...]) -> tuple[str, ...]:
    """Every workload the cells train, built with its parameters and one step run
    (hvd_vs_ddp/workloads/check.py): the throughput ones (`names`, or those of
    --suite-args --workloads, which come later on a cell's command line and win), the
    convergence suite's where a cell runs it, and those given parameters. Returns the
    folders the ranks need on PYTHONPATH to import external workload modules as this
    process did."""
    from hvd_vs_ddp.workloads import check, registry

    params = opts.workload_params
    trained = list(names)
    if opts.workloads != preset.options.workloads:  # --suite-args --workloads
        trained = list(opts.workloads)
    if any("convergence" in c.suites for c in cells):
        trained += opts.convergence_workloads
    folders = []
    for name in dict.fromkeys([*trained, *params]):
        check.check(name, params.get(name, {}), world_size)
        where = registry.resolve(name).pythonpath
        if where:
            folders.append(where)
    return tuple(dict.fromkeys(folders))


def _cells(args: Any, preset: Preset, extra: tuple[str, ...]
           ) -> tuple[tuple[Cell, ...], dict[str, Verdict]]:
    """The matrix, built once, each cell judged once: the preset's cells for these
    choices, each with the extra suite arguments, and their verdicts; a backend asked for
    by name must get a cell and be able to run."""
    backends = list(args.backends) if args.backends else None
    sizes = list(args.world_sizes) if args.world_sizes else None
    sized = dataclasses.replace(preset, workloads=args.workloads) if args.workloads \
        else preset  # per-workload cells (Horovod autotune) follow --workloads
    under = f" under --launchers {','.join(args.launchers)}" if args.launchers else ""
    shown = ",".join(map(str, sizes or preset.world_sizes))
    # a backend the layout gives no cell is refused before any cell is judged (judging
    # imports the backends, and with them torch)
    _every_backend_has_a_cell(backends, matrix.laid_out(sized, backends, sizes), shown, under)
    layout = matrix.judged(sized, backends, sizes, getattr(args, "hosts", None))
    _check_launchers(args.launchers or ())
    _every_backend_has_a_cell(backends, [c for c, _ in layout], shown, under)
    runnable = _leave_out_missing(layout, explicit=bool(backends))
    compared = [c for c in runnable
                if c.backend not in (matrix.COMPUTE_ONLY, *matrix.BASELINES)]
    if args.launchers and not compared:  # the one-rank references alone answer nothing
        raise RunRequestError(
            f"--launchers {','.join(args.launchers)}: no distributed backend's cell at "
            f"--world-sizes {shown} (the launchers' backends: "
            f"{', '.join(_compared_by(args.launchers)) or 'none'})")
    # The cells' own arguments (the tune preset's autotuned cells) come first.
    verdicts = {c.id: v for c, v in layout}
    return (tuple(dataclasses.replace(c, pytest_args=c.pytest_args + extra)
                  for c in runnable), verdicts)


def _every_backend_has_a_cell(backends: list[str] | None, cells: list[Cell], shown: str,
                              under: str) -> None:
    """A backend asked for by name must get a cell at the world sizes asked for."""
    for b in backends or []:
        if not any(c.backend == b for c in cells):
            raise RunRequestError(
                f"--backends {b} at --world-sizes {shown}: no cell ({b} runs at world size 1 "
                "only)" if b in matrix.BASELINES else
                f"--backends {b}: no cell at --world-sizes {shown}{under}")


def _compared_by(chosen: tuple[str, ...]) -> list[str]:
    from hvd_vs_ddp.backends import catalog

    return list(dict.fromkeys(b for name in chosen for b, row in catalog.CATALOG.items()
                              if name in row.launchers))


def _check_launchers(chosen: tuple[str, ...]) -> None:
    """Launchers asked for by name must be ones `run` can start here (as backends asked
    for by name must): otherwise their cells would be left out with a note, and a run of
    the one-rank references alone would look like an answer."""
    from hvd_vs_ddp.backends import launchers

    for name in chosen:
        avail = launchers.available(name)
        if not avail:
            raise RunRequestError(f"--launchers {name}: {avail.reason}")


def _leave_out_missing(layout: list[tuple[Cell, Verdict]], explicit: bool) -> list[Cell]:
    """Cells whose backend and launcher exist here, as their verdicts say. Asked for by
    name: an error if not; part of a preset: left out with a note."""
    keep = []
    for cell, verdict in layout:
        if verdict.kind != MISSING:
            keep.append(cell)
        elif explicit:
            raise RunRequestError(f"{verdict.why}; see `hvd-vs-ddp doctor`")
        else:
            log.info(f"note: leaving out {cell.id} ({verdict.why})")
    return keep

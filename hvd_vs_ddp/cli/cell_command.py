"""The command line of one cell: how the runner starts it and what its pytest gets.

For a cell of the matrix (hvd_vs_ddp/cli/matrix.py): the launcher and process count it
is started with (`launch_as`), its suites' options (`cell_options`: the preset's, the
cell's own choices, then its own arguments), its plan before any rank starts (`plan`,
hvd_vs_ddp/harness/cell_plan.py) and the arguments after `python` of its pytest run
(`pytest_argv`). The runner (hvd_vs_ddp/cli/runner.py) and the run request
(hvd_vs_ddp/cli/run_request.py) call these; nothing here starts a process.

    from hvd_vs_ddp.cli import cell_command, matrix, presets
    p = presets.preset("quick")
    cell = matrix.cells(p)[0]
    cell_command.pytest_argv(cell, "plan.json", "out.json")
"""
from __future__ import annotations

from pathlib import Path

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.backends.launchers import ONE_HOST_LAUNCHERS, ONE_PROCESS
from hvd_vs_ddp.cli import matrix
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.cli.presets import TIMELINE_ROUNDS, Preset
from hvd_vs_ddp.common.cores import node_cores
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.harness import cell_plan
from hvd_vs_ddp.harness.cell_plan import CellPlan
from hvd_vs_ddp.harness.cell_verdict import COMPUTE_ONLY, Verdict, launch_of, orchestrates
from hvd_vs_ddp.harness.knobs import by_name
from hvd_vs_ddp.harness.option_parsing import split_argv
from hvd_vs_ddp.harness.options import SUITES, SuiteOptions
from hvd_vs_ddp.harness.pytest_args import CELL_PLUGINS
from hvd_vs_ddp.links.rates import emulated


def launch_as(cell: Cell) -> tuple[str, int]:
    """The launcher and process count the runner starts the cell's pytest with."""
    if orchestrates(cell):
        return ONE_PROCESS, 1
    return cell.launcher, cell.world_size


def cell_options(cell: Cell, preset: Preset, workloads: list[str] | None = None,
                 run_dir: str | None = None) -> SuiteOptions:
    """The suites' options of one cell, built in one step (so each workload spec is
    resolved once): the preset's, the cell's own choices (its backend, knob set,
    workloads, input; a timeline twin's rounds, a compiling set's cache, a recovery
    cell's world size), then the cell's own arguments (--suite-args, autotune), which
    win as they did when they came last on its command line. `run_dir`: the run
    directory the cell writes into (its outputs may go only there:
    hvd_vs_ddp/common/outputs.py; a compiling set's cache lies in it); the runner always
    gives it, and without it (a cell's options looked at, nothing launched) a compiling
    set keeps the preset's cache."""
    given, _rest = split_argv(cell.pytest_args)
    base = preset.options
    changes: dict = {
        "backends": (cell.backend if cell.backend != COMPUTE_ONLY else catalog.reference(),),
        "knob_set": cell.knob_set, "run_dir": run_dir, "input": (cell.input,),
        "workloads": ((cell.workload,) if cell.workload
                      else tuple(workloads or preset.workloads))}
    if "timeline" in cell.suites:
        changes.update(horovod_timeline="auto", rounds=min(TIMELINE_ROUNDS, base.rounds))
    if by_name(cell.knob_set).compile != "eager" and run_dir:  # cold in its first
        # repetition, then warm
        changes["compile_cache"] = str(RunFolder(Path(run_dir)).compile_cache(cell.id))
    if emulated(cell.link):  # its emulated hosts share this machine's cores: each rank
        # gets its share of them, as on loopback (each "host" would see all of them)
        changes["threads"] = max(1, node_cores() // max(cell.world_size, 1))
    if "recovery" in cell.suites:
        changes.update(recovery_world_size=cell.world_size,
                       recovery_workload=cell.workload or changes["workloads"][0])
    return base.replace(**{**changes, **given})


def plan(cell: Cell, opts: SuiteOptions, hosts: str | None = None,
         time_limit_s: float | None = None, verdict: Verdict | None = None) -> CellPlan:
    """The cell's plan (hvd_vs_ddp/harness/cell_plan.py) before its ranks start: its
    verdicts from `verdict` (the cell's one judgement, `judged`: what `hvd-vs-ddp run`
    gives), or judged here from `opts` (its backend under its launcher and world size, a
    cell that starts its own job judged installed only; each knob set's options and
    compile mode); and where each rank runs. (The host's GPU count is the matrix's, looked
    up there at each call: the one count the tests replace, matrix._gpus.)"""
    from hvd_vs_ddp.backends.launchers import parse_hosts

    spread = parse_hosts(hosts) if hosts and cell.launcher not in ONE_HOST_LAUNCHERS \
        else None
    return cell_plan.build(opts, launch_of(cell, hosts), cell=cell.id,
                           launcher=cell.launcher, world_size=cell.world_size,
                           suites=cell.suites, hosts=spread, gpus=matrix._gpus(),
                           time_limit_s=time_limit_s,
                           judged=verdict.judged if verdict is not None else None)


def pytest_argv(cell: Cell, plan_file: str, json_path: str) -> list[str]:
    """Arguments after `python` for the cell's pytest run: its suites, its plan (which
    holds its options, hvd_vs_ddp/harness/cell_plan.py) and the pytest arguments of its
    own that are not the suites' options."""
    _given, rest = split_argv(cell.pytest_args)
    return ["-m", "pytest", *CELL_PLUGINS, *(SUITES[s] for s in cell.suites),
            "-p", "no:cacheprovider", "-q", cell_plan.OPTION, plan_file, *rest,
            "--benchmark-json", json_path]

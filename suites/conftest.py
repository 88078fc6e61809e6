"""pytest configuration of the benchmark suites: options, the collective plugin, fixtures.

Run the suites under any launcher; each runs the backends that fit it and skips
the rest with a reason (decided from facts every rank shares, then agreed):

    pytest suites/                                    # single, dp, ddp-* at world size 1
    torchrun --standalone --nproc-per-node 2 -m pytest suites/
    mpirun -np 2 python -m pytest suites/             # ddp-gloo, ddp-mpi, horovod (MPI)
    horovodrun -np 4 pytest suites/                   # ddp-gloo, horovod (Gloo)
    pytest suites/ --benchmark-json out.json --knob-set full --workloads resnet50,gpt

Options: --backends, --workloads, --workload-param NAME:KEY=VALUE, --knob-set
default|full, --rounds, --steps-per-round, --warmup-steps, --convergence-steps,
--data-dir (real images for resnet50), --max-bytes (collectives), --test-time-limit.
A workload may be any name or spec hvd_vs_ddp/workloads/external.py resolves (your own
model: docs/own-model.md). --benchmark-json may replace only an earlier results file,
and never lie inside a run directory unless this is that run's cell (--run-dir): the
output gate, hvd_vs_ddp/common/outputs.py.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import torch

from hvd_vs_ddp.backends import catalog, registry
from hvd_vs_ddp.backends.base import BackendUnavailable
from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.common import output_formats, outputs
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.log import configure as configure_logging
from hvd_vs_ddp.common.run_folder import check_output
from hvd_vs_ddp.harness import (
    cell_plan,
    collective_pytest,
    gc_pause,
    horovod_timeline,
    option_parsing,
    pace,
    profiling,
    startup,
    suite_run,
    threads,
    tuning,
    versions,
)
from hvd_vs_ddp.harness.suite_run import SuiteRun
from hvd_vs_ddp.results_schema import MachineInfo
from hvd_vs_ddp.workloads import compiling
from hvd_vs_ddp.workloads import registry as workload_registry


def pytest_addoption(parser: pytest.Parser) -> None:
    collective_pytest.addoption(parser)
    option_parsing.add_to_pytest(parser)
    cell_plan.add_to_pytest(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    startup.mark()
    try:  # a cell of `hvd-vs-ddp run`: its plan, judged before its ranks started; a
        # plain session: its options (the plan is built below, once the ranks can agree)
        planned = config.getoption("cell_plan")
        if planned:
            cell_plan.refuse_options_beside(planned, config.getoption)
        judged = cell_plan.read(planned) if planned else None
        opts = judged.options if judged else option_parsing.from_pytest(config)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    configure_logging()  # the project logger's records (e.g. threads warnings) to stderr
    if opts.compile_cache:  # before anything compiles; one per rank (docs/compile.md)
        compiling.use_cache(os.path.join(opts.compile_cache, f"rank{detect().rank}"))
    tuning.set_budget(opts.knob_set)  # before horovod.torch loads
    # Before the collective plugin hides --benchmark-json from ranks other than 0.
    json_path = getattr(config.option, "benchmark_json", None)
    try:
        if hasattr(json_path, "write"):  # pytest-benchmark < 5.3 opens (truncates) it
            import pytest_benchmark

            raise InputError(f"--benchmark-json {json_path.name}: pytest-benchmark "
                             f"{pytest_benchmark.__version__} opens this file itself before any "
                             "check (an earlier file there is already emptied); hvd-vs-ddp "
                             "needs pytest-benchmark >= 5.3: pip install -U pytest-benchmark")
        timeline = horovod_timeline.target(opts.horovod_timeline, json_path, opts.run_dir)
        if json_path and detect().rank == 0:  # the rank that writes it; the output gate:
            if not Path(json_path).resolve().parent.is_dir():
                raise InputError(f"--benchmark-json {json_path}: folder "
                                 f"{Path(json_path).resolve().parent} does not exist")
            check_output(Path(json_path), output_formats.CELL_RESULTS, opts.run_dir)
    except InputError as exc:
        raise pytest.UsageError(f"--benchmark-json {exc}" if isinstance(
            exc, outputs.OutputRefused) else str(exc)) from None
    if timeline:
        horovod_timeline.enable(timeline[0])
    plugin = collective_pytest.register(config)
    if judged is None:  # the same judgement the runner makes, once, agreed across ranks
        judged = cell_plan.for_session(opts, plugin.env, plugin.coord.gather,
                                     gpus=torch.cuda.device_count()
                                     if torch.cuda.is_available() else 0)
    # Every rank on its own cores where the launcher left it free, before the library's
    # threads start, and the same intra-op threads, whatever the launcher set
    # (harness/threads.py).
    cores = (threads.bind(plugin.env.local_rank, plugin.env.local_size)
             if opts.bind_cores == "auto" else None)
    plan = threads.decide(plugin.env.local_size, opts.threads,
                          threads.loader_workers(opts.knob_set), torch.cuda.is_available())
    threads.apply(plan)
    gc_pause.resume()  # the imports are done: the collector on, as in any script
    # the process's pace, with its own threads, before any backend is set up
    # (hvd_vs_ddp/harness/pace.py; the verdicts may take it out: run_model/pace.py),
    # once every rank has started (a gather through the job's store, not the library):
    # no rank's probe runs beside another rank's imports
    pace_log = pace.PaceLog()
    pace_log.run_pre(settle=lambda: plugin.coord.gather(None, "the pace probe"))
    suite_run.store(config, SuiteRun(
        options=opts, plugin=plugin, plan=judged,
        results_json=json_path,  # autotune logs go beside it
        timeline=timeline[0] if timeline else None,
        timeline_ref=timeline[1] if timeline else None,
        profile_at=profiling.folder_and_stem(json_path),  # --profile-steps traces
        threads=dict(plan.as_dict(), ranks=plugin.coord.gather(torch.get_num_threads(),
                                                                "threads per rank"),
                     bind_cores=opts.bind_cores,
                     cores=plugin.coord.gather(cores, "cores per rank")),
        pace=pace_log))


# Parameters through which a suite test names its backend (first element of a tuple).
_BACKEND_PARAMS = ("throughput_cell", "conv_cell", "coll_cell", "tta_backend", "gan_backend",
                   "compiled_cell")


def _backend_of(item: pytest.Item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    for key in _BACKEND_PARAMS:
        if key in params:
            value = params[key]
            return value[0] if isinstance(value, tuple) else value
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of a backend whose settings are fixed at its start (Horovod: `fixed_at_init`
    in its catalog row) run after every other test of the job (a stable sort, the same on
    every rank). Horovod cannot be shut down and started again in one process, and its
    background thread keeps running once started: with the MPI controller, rank 0 spins
    a whole core while idle (measured here: 4.98 CPU-seconds in 5 idle seconds; Gloo
    controller 0.3). On a busy host that would slow every DDP test that came after it."""
    def last(item: pytest.Item) -> bool:
        name = _backend_of(item)
        return name in catalog.CATALOG and catalog.get(name).fixed_at_init
    items.sort(key=last)


def pytest_unconfigure(config: pytest.Config) -> None:
    run = suite_run.find(config)
    if run is not None:
        run.plugin.unconfigure()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    env, run = detect(), suite_run.find(config)
    machine_info["hvd_vs_ddp"] = MachineInfo(
        launcher=env.launcher, world_size=env.world_size,
        versions=versions.versions(), hardware=versions.hardware(),
        env=versions.knob_env(), threads=run.threads if run else None,
    ).to_dict()


@pytest.fixture
def suite(request) -> SuiteRun:
    """This session's typed run: options, plugin, output places (harness/suite_run.py)."""
    return suite_run.of(request.config)


@pytest.fixture
def make_workload(suite):
    """make_workload(name, **overrides): the workload with --workload-param applied."""
    params = suite.options.workload_params

    def _make(name: str, **overrides):
        return workload_registry.get(name, **{**params.get(name, {}), **overrides})
    return _make


@pytest.fixture
def env():
    return detect()


@pytest.fixture
def plugin(suite) -> collective_pytest.CollectivePlugin:
    return suite.plugin


@pytest.fixture
def open_backend(suite, plugin):
    """open_backend(name, options) -> a set-up backend, or a collective skip."""
    opened = []

    def _open(name: str, options: BackendOptions | None = None):
        if name not in suite.backends:
            pytest.skip(f"{name}: not selected (--backends)")
        why = suite.plan.why_not(name)  # judged once, for every rank alike (cell_plan)
        if why:
            pytest.skip(f"{name}: {why}")
        opts = options or BackendOptions(timeout_s=suite.options.collective_timeout)
        backend = registry.create(name, opts, env=plugin.env)
        try:
            backend.setup(judged=True)
        except BackendUnavailable as exc:  # what this process fixed (Horovod's settings
            pytest.skip(str(exc))          # at its start): the same on every rank
        opened.append(backend)
        return backend

    yield _open
    for backend in opened:
        with contextlib.suppress(Exception):
            backend.close()

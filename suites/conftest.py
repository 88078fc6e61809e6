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
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backends import registry  # noqa: E402
from backends.base import BackendOptions  # noqa: E402
from backends.env import detect  # noqa: E402
from hvd_vs_ddp import collective_pytest, versions  # noqa: E402
from hvd_vs_ddp.knobs import FULL, SETS  # noqa: E402
from results import MachineInfo  # noqa: E402
from results.launchers import current as launcher_name  # noqa: E402
from workloads import registry as workload_registry  # noqa: E402

DEFAULT_WORKLOADS = "resnet50,gpt"


def pytest_addoption(parser: pytest.Parser) -> None:
    collective_pytest.addoption(parser)
    g = parser.getgroup("hvd-vs-ddp suites")
    g.addoption("--backends", default=",".join(registry.names()),
                help="comma-separated backends to run (default: all)")
    g.addoption("--workloads", default=DEFAULT_WORKLOADS,
                help=f"comma-separated workloads for throughput (default {DEFAULT_WORKLOADS})")
    g.addoption("--workload-param", action="append", default=[],
                help="NAME:KEY=VALUE, e.g. resnet50:image_size=224 (repeatable)")
    g.addoption("--knob-set", default="default", choices=[*SETS, *(k.name for k in FULL)],
                help="knob sets for the throughput suite: 'default', 'full', or one set's name")
    g.addoption("--rounds", type=int, default=5, help="timed rounds per throughput cell")
    g.addoption("--steps-per-round", type=int, default=2, help="optimizer steps per round")
    g.addoption("--warmup-steps", type=int, default=2, help="untimed steps before the rounds")
    g.addoption("--convergence-steps", type=int, default=30)
    g.addoption("--data-dir", default=None,
                help="a local ImageFolder, or a folder holding CIFAR-10's "
                     "cifar-10-batches-py: resnet50 trains on it (throughput, and a "
                     "convergence cell); nothing is downloaded")
    g.addoption("--max-bytes", type=int, default=64 * 2**20,
                help="largest collective message in bytes (default 64 MiB)")
    g.addoption("--collective-timeout", type=float, default=300.0,
                help="process-group / Horovod timeout in seconds")


def _csv(config: pytest.Config, name: str, known: list[str], what: str) -> list[str]:
    items = [x.strip() for x in config.getoption(name).split(",") if x.strip()]
    unknown = [x for x in items if x not in known]
    if unknown:
        raise pytest.UsageError(f"unknown {what} {', '.join(map(repr, unknown))}; "
                                f"known: {', '.join(known)}")
    return items


def _workload_params(config: pytest.Config) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for spec in config.getoption("workload_param"):
        try:
            name, assignment = spec.split(":", 1)
            key, raw = assignment.split("=", 1)
        except ValueError:
            raise pytest.UsageError(f"--workload-param {spec!r}: expected NAME:KEY=VALUE") from None
        value: object = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        out.setdefault(name, {})[key] = value
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.hvd_selected_backends = _csv(config, "backends", registry.names(), "backend")
    config.hvd_selected_workloads = _csv(config, "workloads", workload_registry.names(),
                                         "workload")
    config.hvd_workload_params = _workload_params(config)
    data_dir = config.getoption("data_dir")
    if data_dir:
        folder = Path(data_dir).expanduser()
        if not folder.is_dir():
            raise pytest.UsageError(f"--data-dir {data_dir}: no such directory")
        params = config.hvd_workload_params.setdefault("resnet50", {})
        params.setdefault("data_dir", str(folder.resolve()))
    config.hvd_plugin = collective_pytest.register(config)


# Parameters through which a suite test names its backend (first element of a tuple).
_BACKEND_PARAMS = ("throughput_cell", "conv_cell", "coll_cell", "tta_backend")


def _backend_of(item: pytest.Item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    for key in _BACKEND_PARAMS:
        if key in params:
            value = params[key]
            return value[0] if isinstance(value, tuple) else value
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Horovod's tests run after every other test of the job (a stable sort, the same on
    every rank). Horovod cannot be shut down and started again in one process, and its
    background thread keeps running once started: with the MPI controller, rank 0 spins
    a whole core while idle (measured here: 4.98 CPU-seconds in 5 idle seconds; Gloo
    controller 0.3). On a busy host that would slow every DDP test that came after it."""
    items.sort(key=lambda item: _backend_of(item) == "horovod")


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = getattr(config, "hvd_plugin", None)
    if plugin is not None:
        plugin.unconfigure()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    env = detect()
    machine_info["hvd_vs_ddp"] = MachineInfo(
        launcher=launcher_name(env.launcher), world_size=env.world_size,
        versions=versions.versions(), hardware=versions.hardware(),
        env=versions.knob_env(),
    ).to_dict()


def selected_backends(config: pytest.Config) -> list[str]:
    return config.hvd_selected_backends


@pytest.fixture
def make_workload(request):
    """make_workload(name, **overrides): the workload with --workload-param applied."""
    def _make(name: str, **overrides):
        params = {**request.config.hvd_workload_params.get(name, {}), **overrides}
        return workload_registry.get(name, **params)
    return _make


@pytest.fixture
def env():
    return detect()


@pytest.fixture
def plugin(request) -> collective_pytest.CollectivePlugin:
    return request.config.hvd_plugin


@pytest.fixture
def open_backend(request, plugin):
    """open_backend(name, options) -> a set-up backend, or a collective skip."""
    opened = []

    def _open(name: str, options: BackendOptions | None = None):
        if name not in request.config.hvd_selected_backends:
            pytest.skip(f"{name}: not selected (--backends)")
        cls = registry.get(name)
        avail = registry.availability(name)
        fit = cls.launch_fit(plugin.env) if avail else avail
        verdicts = plugin.coord.gather([bool(avail and fit), (fit.reason if avail else
                                                               avail.reason)],
                                       f"{name} availability")
        bad = [(r, why) for r, (ok, why) in enumerate(verdicts) if not ok]
        if bad:
            pytest.skip(f"{name}: {bad[0][1]}")
        timeout = request.config.getoption("collective_timeout")
        opts = options or BackendOptions(timeout_s=timeout)
        backend = registry.create(name, opts, env=plugin.env).setup()
        opened.append(backend)
        return backend

    yield _open
    for backend in opened:
        with contextlib.suppress(Exception):
            backend.close()

"""A cell's plan: everything one cell needs, judged once, written once, read by every rank.

`CellPlan` is frozen and typed: the backends the cell trains, its launcher and world
size, where each rank runs (hvd_vs_ddp/backends/placement.py's `plan`), its suites, its
knob sets and their compile modes, its input pipelines, the suites' options with every
workload spec already resolved to its canonical form (hvd_vs_ddp/harness/options.py),
its time limit, and the verdicts: for each backend whether it can run under this launch
(`unfit`), and for each backend and knob set whether it honours that set's options and
compile mode (`refusals`), each a one-line reason. The verdicts come from one place,
each backend's `judge` (hvd_vs_ddp/backends/base.py), asked by `judge_backends` and
nowhere else in the suites.

Two ways to the same plan, by the same code (`build`):

- `hvd-vs-ddp run`: the run request builds each cell's plan from the cell's one verdict
  (hvd_vs_ddp/harness/cell_verdict.py, which asked `judge_backends` once for it), before
  any process starts; the runner writes it to `RunFolder.plan(stem)`
  (cells/<stem>.plan.json, through the output gate); each rank's pytest gets
  `--cell-plan FILE`, reads it (`read`) and judges nothing again;
- a plain pytest session (`horovodrun -np 4 pytest suites/`, `tox -e ddp`): the suites'
  conftest builds the plan once from its options and the launcher it finds
  (`for_session`), every rank alike, and agrees on the verdicts across ranks.

    python -m hvd_vs_ddp.harness.cell_plan RUN_DIR/cells/STEM.plan.json   # print a plan
"""
from __future__ import annotations

import dataclasses
import json
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from hvd_vs_ddp.backends import placement, registry
from hvd_vs_ddp.backends.env import LauncherEnv
from hvd_vs_ddp.common import digests, output_formats
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.run_folder import write_output
from hvd_vs_ddp.harness.knobs import SETS, KnobSet, by_name
from hvd_vs_ddp.harness.options import SuiteOptions

FORMAT = output_formats.CELL_PLAN
VERSION = 1
OPTION = "--cell-plan"  # the pytest option a cell's ranks read their plan from


def knob_sets(name: str) -> tuple[KnobSet, ...]:
    """The knob sets a session's throughput suite runs for --knob-set `name`."""
    return tuple(SETS[name]) if name in SETS else (by_name(name),)


def _key(backend: str, knob: str) -> str:
    return f"{backend} {knob}"


@dataclass(frozen=True)
class CellPlan:
    """One cell, judged: see the module docstring."""

    cell: str                           # the cell's id ("" for a plain pytest session)
    backends: tuple[str, ...]
    launcher: str
    world_size: int
    placement: tuple[placement.Placement, ...]  # every rank's, as planned
    suites: tuple[str, ...]             # the suites' names (options.SUITES); () = all
    knob_sets: tuple[str, ...]
    compile_modes: tuple[str, ...]      # each knob set's, in the same order
    inputs: tuple[str, ...]             # input pipelines of the throughput suite
    options: SuiteOptions               # resolved once: canonical workload specs
    unfit: Mapping[str, str] = field(default_factory=dict)      # backend -> why not
    refusals: Mapping[str, str] = field(default_factory=dict)   # "backend knob" -> why
    time_limit_s: float | None = None   # the cell's wall-clock limit (the runner's)
    paths: Mapping[str, str] = field(default_factory=dict)  # elastic path -> why not here

    # -- what the suites ask ----------------------------------------------
    def why_not(self, backend: str) -> str | None:
        """Why `backend` cannot run under this cell's launch, or None."""
        return self.unfit.get(backend)

    def refusal(self, backend: str, knob: str) -> str | None:
        """Why `backend` cannot run knob set `knob` (its options, its compile mode)."""
        return self.unfit.get(backend) or self.refusals.get(_key(backend, knob))

    def path_missing(self, path: str) -> str | None:
        """Why elastic path `path` (the recovery suite's) cannot run here: its launcher,
        its package or tools missing; None where it can."""
        return self.paths.get(path)

    # -- the file ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        opts = {f.name: _jsonable(getattr(self.options, f.name))
                for f in dataclasses.fields(SuiteOptions)}
        return {"format": FORMAT, "version": VERSION, "cell": self.cell,
                "backends": list(self.backends), "launcher": self.launcher,
                "world_size": self.world_size,
                "placement": [dataclasses.asdict(p) for p in self.placement],
                "suites": list(self.suites), "knob_sets": list(self.knob_sets),
                "compile_modes": list(self.compile_modes), "inputs": list(self.inputs),
                "options": opts, "unfit": dict(self.unfit), "refusals": dict(self.refusals),
                "paths": dict(self.paths), "time_limit_s": self.time_limit_s}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "CellPlan":
        if doc.get("format") != FORMAT:
            raise ValueError(f"not a cell plan (format {doc.get('format')!r})")
        if doc.get("version") != VERSION:
            raise ValueError(f"cell plan version {doc.get('version')!r}; this hvd-vs-ddp "
                             f"reads version {VERSION}")
        return cls(cell=str(doc["cell"]), backends=tuple(doc["backends"]),
                   launcher=str(doc["launcher"]), world_size=int(doc["world_size"]),
                   placement=tuple(placement.Placement(**p) for p in doc["placement"]),
                   suites=tuple(doc["suites"]), knob_sets=tuple(doc["knob_sets"]),
                   compile_modes=tuple(doc["compile_modes"]), inputs=tuple(doc["inputs"]),
                   options=_trusted(doc["options"]), unfit=dict(doc["unfit"]),
                   refusals=dict(doc["refusals"]), paths=dict(doc.get("paths", {})),
                   time_limit_s=doc.get("time_limit_s"))


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _trusted(values: Mapping[str, Any]) -> SuiteOptions:
    """The SuiteOptions a plan holds, as they were judged (canonical, checked): not
    judged again (no workload is resolved, no folder looked at)."""
    opts = object.__new__(SuiteOptions)
    for f in dataclasses.fields(SuiteOptions):
        value = values.get(f.name, f.default)
        object.__setattr__(opts, f.name, tuple(value) if isinstance(value, list) else value)
    return opts


# -- building a plan: the one judgement of a cell --------------------------
@dataclass(frozen=True)
class Judged:
    """A plan's verdicts: for each backend whether it can run under the launch (`unfit`),
    for each backend and knob set whether it honours that set's options and compile mode
    (`refusals`), and why each elastic path of the recovery suite cannot run (`paths`)."""

    unfit: Mapping[str, str] = field(default_factory=dict)
    refusals: Mapping[str, str] = field(default_factory=dict)
    paths: Mapping[str, str] = field(default_factory=dict)


def judge_backends(backends: tuple[str, ...], launch: LauncherEnv | None,
                   sets: tuple[KnobSet, ...], recovers: bool,
                   timeout_s: float | None = None) -> Judged:
    """The verdicts of a plan training `backends` started as `launch` (None: only whether
    each is installed), in knob sets `sets`, each backend's one judgement asked once per
    set; `recovers`: the recovery suite runs (its elastic paths are judged too).
    `timeout_s`: the collective timeout the options carry (None: the default)."""
    unfit: dict[str, str] = {}
    refusals: dict[str, str] = {}
    for backend in backends:
        verdict = registry.judge(backend, launch)
        if not verdict:
            unfit[backend] = verdict.reason
            continue
        for knob in sets:
            opts = knob.backend_options() if timeout_s is None else \
                knob.backend_options(timeout_s)
            said = registry.judge(backend, launch, opts, knob.compile)
            if not said:
                refusals[_key(backend, knob.name)] = said.reason
    return Judged(unfit, refusals, _elastic_paths(backends) if recovers else {})


def build(options: SuiteOptions, launch: LauncherEnv | None, *, cell: str = "",
          launcher: str | None = None, world_size: int | None = None,
          suites: tuple[str, ...] = (), hosts: list[tuple[str, int]] | None = None,
          gpus: int = 0, time_limit_s: float | None = None,
          judged: Judged | None = None) -> CellPlan:
    """The plan of a cell (or a session) training `options.backends` started as `launch`
    (None: its launch is not the backends' own, e.g. a recovery cell's one process that
    starts the elastic job itself: only whether each backend is installed is judged).
    `hosts`: (name, slots) of the hosts its ranks fill (default: this host); `gpus`: GPUs
    per host. `judged`: its verdicts, judged already (`hvd-vs-ddp run`: the cell's one
    verdict, hvd_vs_ddp/harness/cell_verdict.py); None: judged here (`judge_backends`)."""
    launcher = launcher or (launch.launcher if launch else "single")
    world_size = world_size or (launch.world_size if launch else 1)
    sets = knob_sets(options.knob_set)
    if judged is None:
        recovers = not suites or "recovery" in suites  # a session: whatever it collects
        judged = judge_backends(tuple(options.backends), launch, sets, recovers,
                                options.collective_timeout)
    return CellPlan(cell=cell, backends=tuple(options.backends), launcher=launcher,
                    world_size=world_size,
                    placement=_placement(hosts, world_size, gpus), suites=tuple(suites),
                    knob_sets=tuple(k.name for k in sets),
                    compile_modes=tuple(k.compile for k in sets),
                    inputs=tuple(options.input), options=options, unfit=judged.unfit,
                    refusals=judged.refusals, time_limit_s=time_limit_s,
                    paths=judged.paths)


def _elastic_paths(backends: tuple[str, ...]) -> dict[str, str]:
    """Why each elastic path of these backends cannot run here (the recovery suite's
    trials: hvd_vs_ddp/recovery/plan.py), judged like the backends: once."""
    from hvd_vs_ddp.backends import catalog, launchers
    from hvd_vs_ddp.recovery.plan import PATHS

    out: dict[str, str] = {}
    for name in dict.fromkeys(p for b in backends for p in catalog.get(b).elastic):
        path = PATHS[name]
        for avail in (launchers.available(path.launcher), path.available()):
            if not avail:
                out[name] = avail.reason
                break
    return out


def _placement(hosts: list[tuple[str, int]] | None, world_size: int, gpus: int
               ) -> tuple[placement.Placement, ...]:
    """Where each rank runs, as backends/placement.py plans it; () where it cannot place
    them (the backends' launch fit says why, in `unfit`)."""
    hosts = hosts or [(socket.gethostname(), world_size)]
    try:
        return tuple(placement.plan(hosts, world_size, gpus, on_gpu=gpus > 0))
    except placement.PlacementError:
        return ()


def for_session(options: SuiteOptions, env: LauncherEnv,
                gather: Callable[[Any, str], list[Any]], gpus: int = 0) -> CellPlan:
    """A plain pytest session's plan (no runner): built from its options on every rank,
    its verdicts agreed (`gather`: the collective plugin's all-gather), so that a backend
    one rank cannot run is refused on every rank with that rank's reason."""
    mine = build(options, env, launcher=env.launcher, world_size=env.world_size,
                 hosts=_session_hosts(env), gpus=gpus)
    every = gather([mine.unfit, mine.refusals], "the session's plan")
    unfit: dict[str, str] = {}
    refusals: dict[str, str] = {}
    for their_unfit, their_refusals in every:
        for k, why in their_unfit.items():
            unfit.setdefault(k, why)
        for k, why in their_refusals.items():
            refusals.setdefault(k, why)
    return dataclasses.replace(mine, unfit=unfit, refusals=refusals)


def _session_hosts(env: LauncherEnv) -> list[tuple[str, int]]:
    nodes = max(1, env.world_size // max(env.local_size, 1))
    if nodes == 1:
        return [(socket.gethostname(), env.world_size)]
    return [(f"node{i}", env.local_size) for i in range(nodes)]


# -- the file ---------------------------------------------------------------
def write(plan: CellPlan, file: Path, owner: Path | None) -> digests.Digest:
    """Write the plan through the output gate (`owner`: the run it belongs to)."""
    return write_output(Path(file), FORMAT, plan.to_dict(), owner)


def read(file: str | Path) -> CellPlan:
    """The plan at `file`; InputError (one line) if it is missing or not a plan."""
    try:
        return CellPlan.from_dict(json.loads(Path(file).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{OPTION} {file}: {exc}") from None


def refuse_options_beside(file: str, getoption: Callable[[str], Any]) -> None:
    """A pytest given --cell-plan takes every suite option from the plan: one given on its
    command line too would be ignored, so it is refused (InputError, one line)."""
    from hvd_vs_ddp.harness import option_parsing

    given = [flag for flag, kwargs in option_parsing._declarations()
             if getoption(kwargs["dest"]) not in (kwargs["default"], None, [])]
    if given:
        raise InputError(f"{OPTION} {file}: {', '.join(given)} given too; a cell's plan holds "
                         "every suite option (drop them, or drop --cell-plan)")


def add_to_pytest(parser: Any) -> None:
    """The suites' --cell-plan option (suites/conftest.py's pytest_addoption)."""
    parser.getgroup("hvd-vs-ddp suites").addoption(
        OPTION, dest="cell_plan", default=None,
        help="set by `hvd-vs-ddp run` for its cells: the cell's plan (JSON), judged "
             "before its ranks started; its options replace the suites' other options")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(json.dumps(read(name).to_dict(), indent=1))

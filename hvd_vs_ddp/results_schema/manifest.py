"""manifest.json of a run directory: the run and every cell's status.

Written by hvd_vs_ddp/cli/runner.py (atomically, after every cell), read by `--resume`
and by reports. A cell is one pytest run of some suites for one backend, under one
launcher, at one world size; `results` (relative to the run directory) names its
pytest-benchmark JSON once it ran.

    m = Manifest(command=[...], preset="quick", cells=[CellEntry.pending(**cell.as_dict())])
    m.cells[0].status = "passed"
    RunFolder(run_dir).write_json(RunFolder(run_dir).manifest, RUN_MANIFEST, m.to_dict())

Repetitions (`hvd-vs-ddp run --repeat N`, optional fields of format version 2): each
cell runs N times, each time a fresh process with its own results file and log
(`cells/<id>.r<k>.json`), recorded in `CellEntry.repeats` (a cell that times nothing,
e.g. collectives only, runs once); the cell's own status is
"passed" only when every repetition passed, and its `results` names the first
repetition's file (so a reader that knows nothing of repetitions reads one). The
manifest records `repeat`, the shuffle seed `order_seed` and the interleaved `order`
("<cell id>.r<k>", round by round) in which the repetitions ran.

Digests (optional `files` of a cell and of each repetition, added 2026-11-27 within
format version 2): every file a run of a cell wrote (its results, Horovod timeline,
profiler traces, autotune log, recovery trials, its log), relative to the run directory,
with its size and sha256 as the runner found it when the cell's processes had ended:
`{"cells/x.json": {"size": 4096, "sha256": "..."}, ...}`. `--resume` and `report` check
them (hvd_vs_ddp/results_schema/integrity.py); a run recorded before them has no `files`
and is checked by reading its results instead. The manifest's own `digest` is the sha256
of its canonical JSON without that field, set by the runner at every save: a manifest
edited afterwards (a status, a record, a repetition's foreign load) says so in a note
(`Manifest.edited`), and is then used as it is, every file still checked against it.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from hvd_vs_ddp.results_schema.fields import (
    Invalid,
    Record,
    flag,
    instance,
    integer,
    listof,
    mapping,
    nullable,
    number,
    one_of,
    opt,
    req,
    strings,
    text,
)
from hvd_vs_ddp.results_schema.version import FORMAT, FORMAT_VERSION

_HEX64 = re.compile(r"[0-9a-f]{64}")


def digests(v: Any, name: str, finite: bool) -> None:
    """`files`: {relative path: {"size": int >= 0, "sha256": 64 hex digits}}."""
    if not isinstance(v, dict):
        raise Invalid(name, f"is {type(v).__name__}; expected a JSON object of files")
    for rel, d in v.items():
        ok = isinstance(d, dict) and set(d) == {"size", "sha256"} and \
            isinstance(d["size"], int) and not isinstance(d["size"], bool) and \
            d["size"] >= 0 and isinstance(d["sha256"], str) and _HEX64.fullmatch(d["sha256"])
        if not rel or not ok:
            raise Invalid(f"{name}[{rel!r}]", "expected {\"size\": bytes, \"sha256\": 64 "
                          "hex digits}")


STATUSES = ("passed", "failed", "timeout", "interrupted", "pending", "running")
_text_or_null = nullable(text)


@dataclass(kw_only=True)
class RunStatus(Record):
    """How one run of a cell went: shared by a cell entry and each of its repetitions."""
    status: str = req(one_of(*STATUSES), default="pending")
    error: str | None = req(_text_or_null, default=None)
    seconds: float | None = req(nullable(number(0)), default=None)
    results: str | None = req(_text_or_null, default=None)   # relative to the run directory
    log: str | None = req(_text_or_null, default=None)
    started: str | None = opt(text)
    returncode: int | None = opt(integer())
    files: dict[str, dict[str, Any]] | None = opt(digests)  # what it wrote: size, sha256


@dataclass(kw_only=True)
class _RepetitionId(Record):
    rep: int = req(integer(1))        # 1..repeat


@dataclass(kw_only=True)
class Repetition(RunStatus, _RepetitionId):  # fields: rep, then the status
    """One run (one fresh process) of a cell."""
    # CPU cores' worth of work done on this host by processes other than the cell's
    # while it ran (hvd_vs_ddp/common/cpu_load.py); the report leaves disturbed repetitions out.
    foreign_load: float | None = opt(number(0))


@dataclass(kw_only=True)
class _CellId(Record):
    id: str = req(text)
    backend: str = req(text)          # a backend name, or "compute-only"
    launcher: str = req(text)
    world_size: int = req(integer(1))
    suites: list[str] = req(strings)
    pytest_args: list[str] = req(strings, default_factory=list)
    knob_set: str = req(text, default="default")


@dataclass(kw_only=True)
class CellEntry(RunStatus, _CellId):  # fields: the cell, its status, its repetitions
    repeats: list[Repetition] | None = opt(listof(instance(Repetition)), nested=Repetition)
    workload: str | None = opt(text)  # the one workload this cell runs (Horovod autotune)
    input: str | None = opt(text)  # its input mode (run --input); absent: "memory" (before modes)
    link: str | None = opt(text)  # a rate between emulated hosts (--link-rate); absent: loopback

    def consistency(self) -> None:
        reps = [r.rep for r in self.repeats or []]
        if reps != list(range(1, len(reps) + 1)):
            raise Invalid("repeats", f"numbers repetitions {reps}; expected 1..{len(reps)} "
                          "in order")

    @classmethod
    def pending(cls, id: str, backend: str, launcher: str, world_size: int,
                suites: Iterable[str], pytest_args: Iterable[str] = (),
                knob_set: str = "default", workload: str | None = None,
                input: str | None = None, link: str | None = None) -> "CellEntry":
        """A cell not run yet, from cli.cell.Cell.as_dict() (tuples become lists); its
        input mode is always written (an entry without one is from before input modes were
        named, when every cell read "memory")."""
        return cls(id=id, backend=backend, launcher=launcher, world_size=world_size,
                   suites=list(suites), pytest_args=list(pytest_args), knob_set=knob_set,
                   workload=workload, input=input, link=link)


@dataclass(kw_only=True)
class Manifest(Record):
    format: str = req(one_of(FORMAT), default=FORMAT)
    format_version: int = req(integer(1), default=FORMAT_VERSION)
    command: list[str] | None = req(nullable(strings), default=None)
    preset: str | None = req(_text_or_null, default=None)
    git_commit: str | None = req(_text_or_null, default=None)
    started: str | None = req(_text_or_null, default=None)
    finished: str | None = req(_text_or_null, default=None)
    complete: bool | None = req(nullable(flag), default=False)
    versions: dict[str, Any] | None = req(nullable(mapping), default=None)
    hardware: dict[str, Any] | None = req(nullable(mapping), default=None)
    env: dict[str, Any] | None = req(nullable(mapping), default=None)
    workloads: list[str] | None = req(nullable(strings), default=None)
    knob_set: str | None = req(_text_or_null, default=None)
    hosts: str | None = req(_text_or_null, default=None)
    cells: list[CellEntry] = req(listof(instance(CellEntry)), nested=CellEntry,
                                 default_factory=list)
    resumed: list[str] | None = opt(strings)        # once the run was resumed
    interrupted: str | None = opt(text)             # when SIGINT/SIGTERM/SIGHUP stopped it
    repeat: int | None = opt(integer(1))            # repetitions per cell (--repeat)
    order_seed: int | None = opt(integer())         # seed of the shuffled round-robin order
    order: list[str] | None = opt(strings)          # "<cell id>.r<k>" in the order they ran
    digest: str | None = opt(text)                  # sha256 of the rest (content_digest)
    budget: dict[str, Any] | None = opt(mapping)    # run --budget: its plan and state

    def consistency(self) -> None:
        seen: set[str] = set()
        for i, c in enumerate(self.cells):
            if c.id in seen:
                raise Invalid(f"cells[{i}].id", f"{c.id!r} repeats an earlier cell's id; "
                              "expected unique cell ids")
            seen.add(c.id)
            most = max(self.repeat or 0, int((self.budget or {}).get("max_reps") or 0))
            if self.repeat is not None and len(c.repeats or []) > most:
                raise Invalid(f"cells[{i}].repeats", f"has {len(c.repeats or [])} "
                              f"repetitions; expected at most repeat = {self.repeat} (or "
                              "a budget's max_reps)")

    def content_digest(self) -> str:
        """sha256 of the manifest's canonical JSON (sorted keys), its `digest` left out."""
        doc = self.to_dict()
        doc.pop("digest", None)
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def edited(self) -> bool:
        """Whether the manifest changed after the runner wrote it (it has a digest, and
        its content no longer matches it)."""
        return self.digest is not None and self.digest != self.content_digest()

    def cell(self, cell_id: str) -> CellEntry:
        return next(c for c in self.cells if c.id == cell_id)

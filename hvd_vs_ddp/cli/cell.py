"""One cell of the comparison matrix: what it runs, and its id.

A cell is one pytest run of the suites for one backend, under one launcher, at one world
size (hvd_vs_ddp/cli/matrix.py lays them out). `Cell.id` names it everywhere (its
results file, its log, its plan, a report's rows); `as_dict` is its manifest entry and
`from_dict` reads it back (a resumed run's cells, hvd_vs_ddp/results_schema/manifest.py).

    from hvd_vs_ddp.cli.cell import Cell
    Cell("ddp-gloo", "torchrun", 2, ("throughput",)).id     # 'ddp-gloo-torchrun-np2'
    Cell("ddp-gloo", "torchrun", 2, ("throughput",), link="1gbit").id
                                                 # 'ddp-gloo-torchrun-np2-link1gbit'
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT, MEMORY
from hvd_vs_ddp.links.rates import emulated
from hvd_vs_ddp.workloads.external import slug as workload_slug


@dataclass(frozen=True)
class Cell:
    backend: str          # a backend name, or "compute-only"
    launcher: str
    world_size: int
    suites: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    knob_set: str = "default"
    workload: str | None = None  # one workload only (Horovod autotune: one per process)
    input: str = DEFAULT_INPUT  # the throughput suite's input mode (--input)
    # a cell of a manifest written before input modes were named: it reads "memory", the
    # default of its day, and keeps the id it had (no input in it), so a resumed run's
    # cells stay its own
    legacy_input: bool = field(default=False, compare=False)
    # the link between its hosts (hvd_vs_ddp/links/): None or "loopback", today's one host;
    # a rate ("1gbit"): one rank per emulated host over a link shaped to it (run
    # --emulate-hosts 2 --link-rate ...)
    link: str | None = None

    @property
    def id(self) -> str:
        tail = "" if self.knob_set == "default" else f"-{self.knob_set}"
        tail += f"-{workload_slug(self.workload)}" if self.workload else ""
        plain = self.input == DEFAULT_INPUT or self.legacy_input
        tail += "" if plain else f"-{self.input}"
        tail += f"-link{self.link}" if emulated(self.link) else ""
        tail += "-timeline" if "timeline" in self.suites else ""
        tail += "-recovery" if "recovery" in self.suites else ""
        return f"{self.backend}-{self.launcher}-np{self.world_size}{tail}"

    def as_dict(self) -> dict:
        d = asdict(self)
        if d.pop("legacy_input"):
            d["input"] = None  # written as it was read: without one
        if d["link"] is None:
            del d["link"]  # a one-host cell's entry as it always was
        d["id"] = self.id
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Cell":
        """The cell a manifest entry (as_dict() plus status fields) describes; an entry
        without an input is from before input modes were named, when cells read "memory"."""
        legacy = not d.get("input")
        return cls(d["backend"], d["launcher"], int(d["world_size"]), tuple(d["suites"]),
                   tuple(d.get("pytest_args", ())), d.get("knob_set", "default"),
                   d.get("workload"), d.get("input") or MEMORY, legacy_input=legacy,
                   link=d.get("link"))

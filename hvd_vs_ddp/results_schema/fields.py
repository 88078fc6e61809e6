"""Typed records on plain dataclasses: one check per field, to_dict and from_dict.

Every record of the format (hvd_vs_ddp/results_schema/kinds/, manifest.py, machine.py) is a
keyword-only dataclass whose fields are declared with `req(check)` (the key must be
present; the check says whether null is allowed) or `opt(check)` (the key may be
absent; None stands for absent and is not written). Keys a record does not declare
are kept in `extra` and written back, so a newer writer's additions survive a round
trip through an older reader.

    rec = ThroughputRecord.from_dict(info, where="cells/a.json: benchmark 'x'")
    rec.to_dict() == info                   # for every valid info

Checks run when a record is built (shape: types, lengths, allowed values; a writer's
bug fails in the writer) and in `from_dict`, which also refuses NaN and infinity in
measurements, so a reader never plots or compares them. A suite may still record a
diverged run (a NaN loss): its own assertion then fails and the cell is marked failed.

Why plain dataclasses and these few checks rather than pydantic or jsonschema: pydantic
is not a dependency, and jsonschema (installed for the Kubernetes manifests' tests only)
would need a schema that repeats every dataclass field; every rank imports this module
inside the suites, and what must be checked (finite measurements, equal lengths, the
file and the field in every message, unknown keys kept) is a few lines each.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, ClassVar

from hvd_vs_ddp.results_schema.errors import ResultsError

Check = Callable[[Any, str, bool], None]  # (value, field name, finite?) -> None or Invalid


class Invalid(Exception):
    """One field is wrong: `where` is prefixed by the record that catches it."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name} {problem}")


def _show(v: Any) -> str:
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 40 else r[:37] + '...'}"


def text(v: Any, name: str, finite: bool) -> None:
    if not isinstance(v, str):
        raise Invalid(name, f"is {_show(v)}; expected a string")


def flag(v: Any, name: str, finite: bool) -> None:
    if not isinstance(v, bool):
        raise Invalid(name, f"is {_show(v)}; expected true or false")


def mapping(v: Any, name: str, finite: bool) -> None:
    if not isinstance(v, dict):
        raise Invalid(name, f"is {_show(v)}; expected a JSON object")


def integer(minimum: int | None = None) -> Check:
    def check(v: Any, name: str, finite: bool) -> None:
        if isinstance(v, bool) or not isinstance(v, int):
            raise Invalid(name, f"is {_show(v)}; expected an integer")
        if minimum is not None and v < minimum:
            raise Invalid(name, f"is {v}; expected an integer >= {minimum}")
    return check


def number(minimum: float | None = None) -> Check:
    """A measurement: int or float; finite when read (from_dict)."""
    def check(v: Any, name: str, finite: bool) -> None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Invalid(name, f"is {_show(v)}; expected a number")
        if finite and not math.isfinite(v):
            raise Invalid(name, f"is {v}; expected a finite number")
        if minimum is not None and v < minimum:
            raise Invalid(name, f"is {v}; expected a number >= {minimum}")
    return check


def one_of(*allowed: str) -> Check:
    def check(v: Any, name: str, finite: bool) -> None:
        if v not in allowed:
            raise Invalid(name, f"is {_show(v)}; expected one of {', '.join(allowed)}")
    return check


def nullable(inner: Check) -> Check:
    def check(v: Any, name: str, finite: bool) -> None:
        if v is not None:
            inner(v, name, finite)
    return check


def listof(inner: Check, nonempty: bool = False, length: int | None = None) -> Check:
    def check(v: Any, name: str, finite: bool) -> None:
        if not isinstance(v, list):
            raise Invalid(name, f"is {_show(v)}; expected a list")
        if nonempty and not v:
            raise Invalid(name, "is empty; expected a non-empty list")
        if length is not None and len(v) != length:
            raise Invalid(name, f"has {len(v)} items; expected {length}")
        for i, item in enumerate(v):
            inner(item, f"{name}[{i}]", finite)
    return check


def instance(cls: type) -> Check:
    """A nested record (built by from_dict from its JSON object)."""
    def check(v: Any, name: str, finite: bool) -> None:
        if not isinstance(v, cls):
            raise Invalid(name, f"is {_show(v)}; expected a {cls.__name__}")
    return check


strings = listof(text)
numbers = listof(number())


def req(check: Check, nested: type | None = None, default: Any = MISSING,
        default_factory: Any = MISSING) -> Any:
    """A field whose key must be present when read (the check decides whether null is
    allowed); a default only spares writers from spelling it out."""
    meta = {"check": check, "optional": False, "nested": nested}
    return field(default=default, default_factory=default_factory, metadata=meta)


def opt(check: Check, nested: type | None = None) -> Any:
    """A field whose key may be absent; None means absent and is not written."""
    return field(default=None, metadata={"check": check, "optional": True, "nested": nested})


@dataclass(kw_only=True)
class Record:
    """Base of every record: checked fields, unknown keys kept in `extra`."""

    HEAD: ClassVar[dict[str, Any]] = {}   # constant keys written first (e.g. kind)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.check(finite=False, where=type(self).__name__)

    @classmethod
    def specs(cls) -> list:
        return [f for f in fields(cls) if f.name != "extra"]

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in cls.specs()]

    @classmethod
    def required_names(cls) -> list[str]:
        return [f.name for f in cls.specs() if not f.metadata["optional"]]

    def consistency(self) -> None:
        """Rules across fields (equal lengths...); raise Invalid. Subclasses override."""

    def check(self, finite: bool = True, where: str = "") -> None:
        where = where or type(self).__name__
        clash = sorted(set(self.extra) & {*self.field_names(), *self.HEAD})
        if clash:
            raise ResultsError(f"{where}: extra repeats declared field(s) {', '.join(clash)}.")
        try:
            for f in self.specs():
                value = getattr(self, f.name)
                if value is None and f.metadata["optional"]:
                    continue
                f.metadata["check"](value, f.name, finite)
                if f.metadata["nested"] is not None:
                    for i, item in enumerate(value):
                        item.check(finite, f"{where} {f.name}[{i}]")
            self.consistency()
        except Invalid as err:
            raise ResultsError(f"{where}: {err}.") from None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (shares lists with the record; copy before mutating)."""
        out = dict(self.HEAD)
        for f in self.specs():
            value = getattr(self, f.name)
            if value is None and f.metadata["optional"]:
                continue
            if f.metadata["nested"] is not None:
                value = [item.to_dict() for item in value]
            out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, d: Any, where: str = ""):
        """Validate d (finite measurements included) and build the record, or raise a
        ResultsError whose one line starts with `where` (the file, and which object)."""
        where = where or cls.__name__
        if not isinstance(d, dict):
            raise ResultsError(f"{where}: is {_show(d)}; expected a JSON object.")
        for key, want in cls.HEAD.items():
            if d.get(key, want) != want:
                raise ResultsError(f"{where}: {key} is {d[key]!r}; expected {want!r}.")
        missing = [n for n in cls.required_names() if n not in d]
        if missing:
            raise ResultsError(f"{where} lacks {', '.join(missing)}.")
        names = set(cls.field_names())
        obj = cls.__new__(cls)
        obj.extra = {k: v for k, v in d.items() if k not in names and k not in cls.HEAD}
        for f in cls.specs():
            value = d.get(f.name, f.default if f.default is not MISSING else None)
            sub = f.metadata["nested"]
            if sub is not None and isinstance(value, list):
                value = [sub.from_dict(x, f"{where} {f.name}[{i}]") for i, x in enumerate(value)]
            setattr(obj, f.name, value)
        obj.check(finite=True, where=where)
        return obj

"""A workload's parameters, declared once: name, type, range, help.

Every workload factory (the built-in ones in hvd_vs_ddp/workloads/registry.py and any
external one, hvd_vs_ddp/workloads/external.py) says which keyword parameters it takes
and what values they may have. `--workload-param NAME:KEY=VALUE` is parsed by the same
declaration in `hvd-vs-ddp run` (before any process starts) and in every rank (the
suites' options), so a value is judged once, by the code that owns it:

    @declare(Param("image_size", int, 8, 4096, help="square input, pixels"))
    def my_workload(batch_size: int = 8, image_size: int = 64) -> Workload: ...

    of(my_workload)["image_size"].parse("-3")
    # ValueError: image_size -3: expected an integer from 8 to 4096

A factory without declarations still works: each keyword parameter's type is its
default's (int, float, str or bool) and its range is open. Declared parameters that the
factory does not take, and parameters without a default, are refused.

    python -m hvd_vs_ddp.workloads.registry     # every workload's declared parameters
"""
from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable

from hvd_vs_ddp.common import values

TYPES = (int, float, str, bool)
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a text", bool: "true or false"}
ATTRIBUTE = "__hvd_vs_ddp_params__"  # where declare() keeps a factory's declarations


@dataclass(frozen=True)
class Param:
    """One keyword parameter of a workload factory.

    type: int, float, str or bool. minimum/maximum: inclusive bounds (numbers);
    above_minimum: the minimum itself is excluded (a learning rate > 0). choices: the
    allowed values. is_dir: the value names an existing directory (made absolute).
    nullable: "none" gives None. default: filled in from the factory's signature.
    validate: a further check of the value (returns it, possibly normalised; raises
    ValueError or InputError), e.g. that a data directory holds images."""

    name: str
    type: type = int
    minimum: float | None = None
    maximum: float | None = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    above_minimum: bool = False
    is_dir: bool = False
    nullable: bool = False
    default: Any = None
    validate: Callable[[Any], Any] | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise TypeError(f"Param {self.name!r}: type must be one of int, float, str, bool")

    # -- what it accepts -----------------------------------------------------
    def expected(self) -> str:
        """'an integer from 8 to 4096', 'a number > 0 and <= 10', 'one of sgd, adamw'."""
        if self.choices:
            what = f"one of {', '.join(map(str, self.choices))}"
        elif self.is_dir:
            what = "an existing directory"
        else:
            what = _TYPE_NAMES[self.type]
            low, high = self.minimum, self.maximum
            show = (lambda v: f"{v:g}") if self.type is float else str
            if low is not None and high is not None and not self.above_minimum:
                what += f" from {show(low)} to {show(high)}"
            else:
                bounds = []
                if low is not None:
                    bounds.append(f"{'>' if self.above_minimum else '>='} {show(low)}")
                if high is not None:
                    bounds.append(f"<= {show(high)}")
                what += (" " + " and ".join(bounds)) if bounds else ""
        return what + (" (or none)" if self.nullable else "")

    def parse(self, text: str) -> Any:
        """The typed value of `text`; ValueError '<name> <text>: expected ...' if not."""
        raw = str(text).strip()
        if self.nullable and raw.lower() in ("none", "null"):
            return None
        try:
            value = _convert(self.type, raw)
        except ValueError:
            raise ValueError(f"{self.name} {_show(text)}: expected {self.expected()}") from None
        return self.check(value, shown=text)

    def check(self, value: Any, shown: Any = None) -> Any:
        """`value` if it is of this type and in range (ints are numbers too)."""
        shown = value if shown is None else shown
        if value is None and self.nullable:
            return None
        bad = ValueError(f"{self.name} {_show(shown)}: expected {self.expected()}")
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        kind: Any = self.type  # (mypy narrows `value` to object through a type variable)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise bad
        if self.type is float and not math.isfinite(value):
            raise bad
        if self.choices and value not in self.choices:
            raise bad
        if self.minimum is not None and (value <= self.minimum if self.above_minimum
                                         else value < self.minimum):
            raise bad
        if self.maximum is not None and value > self.maximum:
            raise bad
        if self.is_dir:
            try:
                value = str(values.directory(value).resolve())
            except ValueError as err:
                raise ValueError(f"{self.name} {_show(shown)}: {err}") from None
        if self.validate is not None:
            try:
                value = self.validate(value)
            except ValueError as exc:
                raise ValueError(f"{self.name} {_show(shown)}: {exc}") from None
        return value

    def describe(self) -> str:
        """One line for listings: 'image_size=64  an integer from 8 to 4096: help'."""
        return f"{self.name}={self.default!r}  {self.expected()}" + (
            f": {self.help}" if self.help else "")


def _show(value: Any) -> str:
    """A value as typed: bare, unless it is empty or has blanks (then quoted)."""
    text = str(value)
    return text if text and text.strip() == text and " " not in text else repr(text)


def _convert(kind: type, raw: str) -> Any:
    if kind is bool:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(raw)
    if kind is int:
        import re

        if not re.fullmatch(r"[-+]?[0-9]+", raw):
            raise ValueError(raw)
        return int(raw)
    if kind is float:
        value = float(raw)  # ValueError for text
        if not math.isfinite(value):
            raise ValueError(raw)
        return value
    if not raw:
        raise ValueError(raw)
    return raw


def declare(*params: Param) -> Callable[[Callable], Callable]:
    """Attach parameter declarations to a workload factory (a decorator)."""
    def attach(factory: Callable) -> Callable:
        setattr(factory, ATTRIBUTE, tuple(params))
        of(factory)  # a declaration the factory does not take fails here, at import
        return factory
    return attach


class DeclarationError(ValueError):
    """A factory's declarations do not match its signature."""


def of(factory: Callable) -> dict[str, Param]:
    """name -> Param for every keyword parameter of `factory`, defaults filled in from its
    signature; undeclared parameters typed by their defaults. DeclarationError if a
    declaration names no parameter, a parameter has no default, or a default is not of
    its declared type."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError) as exc:
        raise DeclarationError(f"cannot read the parameters of {factory!r}: {exc}") from None
    declared = {p.name: p for p in getattr(factory, ATTRIBUTE, ())}
    out: dict[str, Param] = {}
    for name, sig in signature.parameters.items():
        if sig.kind in (sig.VAR_POSITIONAL, sig.VAR_KEYWORD):
            continue
        if sig.default is sig.empty:
            raise DeclarationError(f"parameter {name!r} has no default; every parameter of "
                                   "a workload factory needs one")
        default = sig.default
        if name in declared:
            param = dataclasses.replace(declared.pop(name), default=default)
        elif default is None:
            param = Param(name, str, nullable=True, default=None)
        elif type(default) in TYPES:
            param = Param(name, type(default), default=default)
        else:
            raise DeclarationError(f"parameter {name!r} has a default of type "
                                   f"{type(default).__name__}; declare it with "
                                   "Param(name, int|float|str|bool)")
        if default is not None:
            try:
                param.check(default)
            except ValueError as exc:
                if not param.is_dir:
                    raise DeclarationError(f"default of {exc}") from None
        out[name] = param
    if declared:
        raise DeclarationError(f"declares parameter(s) {', '.join(declared)} that it does "
                               "not take")
    return out

"""The suites' options on command lines: declared to pytest and argparse, parsed back.

Each field of `SuiteOptions` (hvd_vs_ddp/harness/options.py) is one command-line option
(`rounds` -> `--rounds`); `_declarations` gives each its argparse/pytest declaration.
The suites' conftest adds them all to pytest with `add_to_pytest` and reads them back
with `from_pytest`; `parse_argv` checks a user's `--suite-args` with the same
declarations before any process starts (and `refuse_per_cell` refuses the options `run`
chooses per cell); `split_argv` takes a cell's own arguments apart (its plan builds its
options once, hvd_vs_ddp/cli/cell_command.py cell_options).

    python -m hvd_vs_ddp.harness.option_parsing   # the options, their defaults and help
"""
from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path
from typing import Any, Sequence

from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.harness.options import SuiteOptions, _names, flag_of


def _declarations():
    for f in dataclasses.fields(SuiteOptions):
        meta, default = f.metadata, f.default
        kwargs: dict[str, Any] = {"dest": f.name, "help": meta["help"]}
        if meta.get("append"):
            kwargs.update(action="append", default=[])
        elif isinstance(default, tuple):
            kwargs.update(default=",".join(default))
        else:
            kind = {int: int, float: float}.get(type(default), str)
            kwargs.update(type=kind, default=default)
        if default not in (None, ()) and not meta.get("append"):
            kwargs["help"] += f" (default {kwargs['default'] if kwargs['default'] else 'all'})"
        yield flag_of(f.name), kwargs


def add_to_pytest(parser: Any) -> None:
    """Add every option to pytest (suites/conftest.py's pytest_addoption)."""
    group = parser.getgroup("hvd-vs-ddp suites")
    for flag, kwargs in _declarations():
        group.addoption(flag, **kwargs)


def _from_values(get) -> SuiteOptions:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(SuiteOptions):
        raw = get(f.name)
        if f.metadata.get("append"):
            raw = tuple(raw or ())
        elif isinstance(f.default, tuple):
            raw = tuple(x.strip() for x in (raw or "").split(",") if x.strip())
            if f.name == "backends" and not raw:
                raw = tuple(_names("backend"))
        values[f.name] = raw
    return SuiteOptions(**values)


def from_pytest(config: Any) -> SuiteOptions:
    """The options of a pytest run; an InputError for a bad value."""
    return _from_values(config.getoption)


def _split(argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """argparse over the suites' declarations: (the values given, as parsed; the rest)."""

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):
            raise InputError(f"--suite-args: {message}")

    parser = _Parser(add_help=False, allow_abbrev=False)
    for flag, kwargs in _declarations():
        kwargs["default"] = argparse.SUPPRESS
        parser.add_argument(flag, **kwargs)
    known, rest = parser.parse_known_args(list(argv))
    given = vars(known)
    return given, rest


def split_argv(argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """A cell's own arguments, already checked by parse_argv when its run was requested:
    (the options they set, as SuiteOptions field values; the other pytest arguments).
    Nothing is judged or resolved here: the cell's plan builds its options once
    (hvd_vs_ddp/cli/cell_command.py cell_options)."""
    given, rest = _split(argv)
    out: dict[str, Any] = {}
    for name, raw in given.items():
        f = SuiteOptions.__dataclass_fields__[name]
        if f.metadata.get("append"):
            raw = tuple(raw or ())
        elif isinstance(f.default, tuple):
            raw = tuple(x.strip() for x in (raw or "").split(",") if x.strip())
        out[name] = raw
    return out, rest


def parse_argv(argv: Sequence[str] | str) -> tuple[dict[str, Any], list[str]]:
    """Check a user's extra suite arguments (a string is split like a shell would).

    Returns (the options they set, as SuiteOptions field values; the other pytest
    arguments). Raises InputError for a bad value, an unknown name or bad quoting, and
    for other arguments pytest would refuse (hvd_vs_ddp/harness/pytest_args.py)."""
    if isinstance(argv, str):
        try:
            argv = shlex.split(argv)
        except ValueError as exc:
            raise InputError(f"--suite-args {argv!r}: {exc}") from None
    given, rest = _split(argv)
    for name in given:
        if SuiteOptions.__dataclass_fields__[name].metadata.get("internal"):
            raise InputError(f"--suite-args: {flag_of(name)} is set by hvd-vs-ddp run itself")
        meta = SuiteOptions.__dataclass_fields__[name].metadata
        if (meta.get("path") or meta.get("output")) and given[name] not in (None, "auto"):
            given[name] = str(Path(given[name]).expanduser().resolve())  # the ranks start
            # in the checkout: they must see the same file
    full = _from_values(lambda name: given.get(name, _pytest_default(name)))  # validates
    from hvd_vs_ddp.harness import pytest_args

    pytest_args.check(rest, add_to_pytest)  # the rest goes to pytest: its parser checks it
    return {name: getattr(full, name) for name in given}, rest


def refuse_per_cell(given: dict[str, Any]) -> None:
    """`hvd-vs-ddp run --suite-args`: options valid for the suites, but chosen by the run
    for each cell, which is named by them (a later --backends on a cell's command line
    won: a cell "ddp-gloo" trained horovod) are one InputError line."""
    for name in given:
        chooser = SuiteOptions.__dataclass_fields__[name].metadata.get("per_cell")
        if chooser:
            raise InputError(f"--suite-args: {flag_of(name)} is chosen per cell by hvd-vs-ddp "
                             f"run (each cell is named by it); use hvd-vs-ddp {chooser}")


def _pytest_default(name: str) -> Any:
    return dict(_declarations_by_dest())[name]


def _declarations_by_dest():
    for _flag, kwargs in _declarations():
        yield kwargs["dest"], kwargs["default"]


if __name__ == "__main__":
    for flag, kwargs in _declarations():
        print(f"{flag:24s} {kwargs['help']}")

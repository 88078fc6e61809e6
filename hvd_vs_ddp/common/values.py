"""The project's value parsers: a user's text -> a checked number, list or name.

Every command-line value of hvd-vs-ddp (the CLI's options, the suites' pytest options,
the projection's) is parsed by one of these, so the same input gets the same answer and
the same one-line message everywhere. Each raises ValueError whose message says what
was expected (without the flag: the caller adds where it came from). NaN and infinity
are never numbers here, and `" 3"` is 3 but `"3.0"` is not an integer.

    from hvd_vs_ddp.common import values
    values.positive_int("4")             # 4
    values.int_list("1,2,4", minimum=1)  # [1, 2, 4]
    values.seconds("1e9")                # 1000000000.0
    values.directory("~/images")         # Path('/root/images'), if it is a directory
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterable


def integer(text: str, minimum: int | None = None, maximum: int | None = None,
            example: str | None = None) -> int:
    """A whole number written as one (no "3.0", no "0x10"), within the bounds given."""
    raw = str(text).strip()
    if not re.fullmatch(r"-?[0-9]+", raw):
        raise ValueError(_expected("an integer", minimum, maximum, example))
    value = int(raw)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(_expected("an integer", minimum, maximum, example))
    return value


def positive_int(text: str, example: str | None = None) -> int:
    return integer(text, minimum=1, example=example)


def number(text: str, low: float | None = None, high: float | None = None,
           open_low: bool = True, open_high: bool = True, example: str | None = None) -> float:
    """A finite number, inside (low, high) (bounds open unless said otherwise)."""
    try:
        value = float(str(text).strip())
    except ValueError:
        value = math.nan
    ok = math.isfinite(value)
    if ok and low is not None:
        ok = value > low if open_low else value >= low
    if ok and high is not None:
        ok = value < high if open_high else value <= high
    if not ok:
        if low is not None and high is not None:
            what = f"a number between {low:g} and {high:g}"
        elif low is not None:
            what = f"a number {'>' if open_low else '>='} {low:g}"
        else:
            what = "a finite number"
        raise ValueError(what + (f", e.g. {example}" if example else ""))
    return value


def seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    try:
        return number(text, low=0)
    except ValueError:
        raise ValueError("expected a number of seconds > 0") from None


def fraction(text: str, example: str = "0.05") -> float:
    """A number strictly between 0 and 1."""
    return number(text, low=0, high=1, example=example)


def int_list(text: str, minimum: int = 1, maximum: int | None = None,
             example: str = "1,2,4") -> list[int]:
    """Comma-separated integers within bounds; sorted, without repeats."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise ValueError(_expected("comma-separated integers", minimum, maximum, example))
    try:
        out = [integer(p, minimum, maximum) for p in parts]
    except ValueError:
        raise ValueError(_expected("comma-separated integers", minimum, maximum,
                                   example)) from None
    return sorted(set(out))


def names(text: str, known: Iterable[str] | None = None, what: str = "name") -> list[str]:
    """Comma-separated names (each once, order kept); with `known`, each must be one."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise ValueError(f"expected comma-separated {what}s without empty entries")
    if known is not None:
        known = list(known)
        unknown = [p for p in parts if p not in known]
        if unknown:
            raise ValueError(f"unknown {what} {unknown[0]!r}; known {what}s: "
                             f"{', '.join(known)}")
    return list(dict.fromkeys(parts))


def text(value: str) -> str:
    """A non-empty value without NUL (a name, a path): `--name ""` is not 'not given'."""
    if not str(value).strip():
        raise ValueError("expected a value, got an empty string")
    if "\x00" in value:
        raise ValueError("expected a value without a NUL character")
    return value


def directory(value: str | Path) -> Path:
    """An existing directory, `~` expanded (not resolved): 'no such directory' or 'a
    file, not a directory' otherwise."""
    path = Path(value).expanduser()
    if not path.is_dir():
        raise ValueError("a file, not a directory" if path.exists() else "no such directory")
    return path


def _expected(what: str, minimum: int | None, maximum: int | None,
              example: str | None) -> str:
    if minimum is not None and maximum is not None:
        what += f" from {minimum} to {maximum}"
    elif minimum is not None:
        what += f" >= {minimum}"
    elif maximum is not None:
        what += f" <= {maximum}"
    return f"expected {what}" + (f", e.g. {example}" if example else "")

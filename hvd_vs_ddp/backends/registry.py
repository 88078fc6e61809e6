"""Backend names -> backend classes (their behaviour; what they are is in catalog.py,
whose rows name their classes: `impl`), and each backend's one judgement (`judge`).

Classes are imported lazily, so a missing Horovod or mpi4py only matters to the
backends that need it, and this module is torch-free until a class is asked for. An
unknown name fails with the list of known names.

    python -m hvd_vs_ddp.backends.registry     # one line per backend: name, available, why not
    python -m hvd_vs_ddp.backends.registry --compile   # every backend x compile mode here
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.backends.options import BackendOptions
from hvd_vs_ddp.common.availability import Availability
from hvd_vs_ddp.common.errors import UnknownName

if TYPE_CHECKING:
    from hvd_vs_ddp.backends.base import Backend

# name -> "module:Class", from each backend's catalog row (its one declaration)
_BACKENDS: dict[str, str] = {name: row.impl for name, row in catalog.CATALOG.items()}


def names() -> list[str]:
    return list(_BACKENDS)


def get(name: str) -> type["Backend"]:
    try:
        target = _BACKENDS[name]
    except KeyError:
        raise UnknownName("backend", name, _BACKENDS) from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def distributed_names() -> list[str]:
    """Backends that run on many ranks (not the one-process baselines)."""
    return catalog.names(distributed=True)


def create(name: str, options: BackendOptions | None = None, env=None) -> "Backend":
    return get(name)(options, env)


def judge(name: str, launch=None, options: BackendOptions | None = None,
          compile: str = "eager", cuda: bool | None = None,
          installed: bool = True) -> Availability:
    """Backend `name`'s one judgement (Backend.judge): whether it can run here, under
    `launch`, with `options`, in compile mode `compile`; if not, why (one line)."""
    try:
        return get(name).judge(launch, options, compile, cuda, installed)
    except ImportError as exc:  # a backend module whose own imports fail
        return Availability(False, f"cannot import: {exc}")


def availability(name: str) -> Availability:
    """Whether backend `name` is installed and usable here (judge, nothing else asked)."""
    return judge(name)


def doctor_lines() -> list[str]:
    lines = []
    for name in names():
        avail = availability(name)
        lines.append(f"{name:10s} {'available' if avail else 'unavailable':11s} "
                     f"{avail.reason}".rstrip())
    return lines


def compile_lines() -> list[str]:
    """Every backend x compile mode on this machine: offered, or the refusal."""
    from hvd_vs_ddp.backends import compile_support

    return [f"{name:9s} {m:18s} {compile_support.refusal(get(name), m) or 'offered'}"
            for name in names() for m in compile_support.MODES[1:]]


if __name__ == "__main__":
    import sys

    print("\n".join(compile_lines() if "--compile" in sys.argv[1:] else doctor_lines()))

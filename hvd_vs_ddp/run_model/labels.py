"""Backend labels and their order: how a series is named and sorted wherever it is judged
or shown (the report's tables and figures, the budget's pairs, verdicts.json).

A series is labelled by its backend, and Horovod's by its controller when the record's
backend_meta names one: "horovod (gloo)", "horovod (mpi)". Labels sort in the catalog's
order (hvd_vs_ddp/backends/catalog.py), each Horovod controller after its backend, then the
raw mpi4py sweep's, then anything unknown by name. The colours that go with these labels
are the report's (hvd_vs_ddp/reports/theme.py).

    from hvd_vs_ddp.run_model.labels import backend_label, order
    backend_label("horovod", {"controller": "mpi"})   # "horovod (mpi)"
    order(["ddp-gloo", "single", "horovod (gloo)"])   # catalog order
"""
from __future__ import annotations

from typing import Any

from hvd_vs_ddp.backends import catalog

RAW_SWEEP = "mpi4py-raw"  # the raw mpi4py sweep of the collectives suite


def catalog_labels() -> list[tuple[str, str]]:
    """(label, colour) of every backend with a colour in its catalog row, then of its
    controllers' labels, in the catalog's order (the report's palette is these colours)."""
    return [pair for row in catalog.CATALOG.values() for pair in (
        ([(row.name, row.colour)] if row.colour else [])
        + [(f"{row.name} ({ctl})", c) for ctl, c in row.controller_colours.items()])]


ORDER: tuple[str, ...] = (*[label for label, _ in catalog_labels()], RAW_SWEEP)


def backend_label(backend: str, meta: dict[str, Any] | None = None) -> str:
    """Display name: the backend, with Horovod's controller when it is known."""
    controller = (meta or {}).get("controller")
    if catalog.library(backend) == catalog.HOROVOD_LIB and controller and controller != "?":
        return f"{backend} ({controller})"
    return backend


def order(labels) -> list[str]:
    """Labels sorted the same way everywhere: known backends first, then by name."""
    known = {name: i for i, name in enumerate(ORDER)}
    return sorted(set(labels), key=lambda s: (known.get(s, len(known)), s))

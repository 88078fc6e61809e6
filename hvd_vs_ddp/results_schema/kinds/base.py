"""What every benchmark record has, and the helpers its frame builder uses.

A benchmark record is the `extra_info` of one pytest-benchmark entry. Every kind has
`kind` (written first, fixed per class), `backend`, `world_size`, `launcher` and,
optionally, `backend_meta` (the backend's metadata: process group, controller...).
Each kind says which suite file writes it (SUITE, a key of hvd_vs_ddp.cli.matrix's
SUITE_FILES, so a report can tell which suite a benchmark came from without the
manifest) and which report frame its rows go to (FRAME).

`rows()` is the kind's frame builder: the row dicts (no pandas; numpy arrays for raw
series) that hvd_vs_ddp/run_model/frames.py turns into a DataFrame, after adding the run, cell and
label columns.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hvd_vs_ddp.results_schema.fields import Record, integer, mapping, opt, req, text


def as_json(x: Any) -> str:
    """Canonical JSON text: how dict-valued case keys (knobs, params) are compared."""
    return json.dumps(x, sort_keys=True, default=str)


def array(x: Any) -> np.ndarray:
    return np.asarray(x if x is not None else [], dtype=float)


@dataclass(kw_only=True)
class BenchmarkRecord(Record):
    KIND: ClassVar[str] = ""
    SUITE: ClassVar[str] = ""   # matrix suite name: throughput, compute, convergence, collectives
    FRAME: ClassVar[str] = ""   # hvd_vs_ddp.run_model.frames.Data attribute its rows go to

    backend: str = req(text)
    world_size: int = req(integer(1))
    launcher: str = req(text)
    backend_meta: dict[str, Any] | None = opt(mapping)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.KIND:
            cls.HEAD = {"kind": cls.KIND}

    def common_row(self) -> dict[str, Any]:
        return {"backend": self.backend, "launcher": self.launcher,
                "world_size": int(self.world_size), "backend_meta": self.backend_meta or {}}

    def rows(self) -> list[dict[str, Any]]:
        """The kind's columns, one dict per frame row."""
        raise NotImplementedError

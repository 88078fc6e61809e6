"""`machine_info.hvd_vs_ddp` of a cell's pytest-benchmark JSON: what the run depended on.

Written once per pytest run by suites/conftest.py (pytest_benchmark_update_machine_info):
the format version, the launcher and world size this process saw, library versions,
hardware and the knob environment variables.

    MachineInfo(launcher="torchrun", world_size=2, versions={...}, hardware={...},
                env={...}).to_dict()
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hvd_vs_ddp.results_schema.fields import Record, integer, mapping, opt, req, text
from hvd_vs_ddp.results_schema.version import FORMAT_VERSION


@dataclass(kw_only=True)
class MachineInfo(Record):
    format_version: int = req(integer(1), default=FORMAT_VERSION)
    launcher: str | None = opt(text)
    world_size: int | None = opt(integer(1))
    versions: dict[str, Any] | None = opt(mapping)
    hardware: dict[str, Any] | None = opt(mapping)
    env: dict[str, Any] | None = opt(mapping)
    # per_rank, node_cores, usable_cores, local_ranks, source, ranks (hvd_vs_ddp/harness/threads.py)
    threads: dict[str, Any] | None = opt(mapping)

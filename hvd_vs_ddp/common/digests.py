"""What a file held when it was written: its size and sha256 (`Digest`), and how it differs.

`digest(path)` is the size and sha256 of a file as it is now; a run records one for every
file a cell wrote (its results, timeline, traces, log) in its manifest
(hvd_vs_ddp/results_schema/integrity.py), the output gate returns one for each file it
writes (hvd_vs_ddp/common/outputs.py), and `Digest.differs(now)` says in a few words how
a file's present state departs from the recorded one (missing, truncated, larger,
changed), so what a file is vouched for is judged by one rule everywhere.

    from hvd_vs_ddp.common.digests import digest
    recorded = digest(Path("runs/r/cells/x.json"))
    recorded.differs(digest(Path("runs/r/cells/x.json")))   # None: unchanged
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Digest:
    """What a file held when it was written: its size in bytes and its sha256 (hex)."""
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"size": self.size, "sha256": self.sha256}

    def differs(self, now: "Digest | None") -> str | None:
        """How `now` (None: no such file) departs from this record, or None if it does
        not: 'missing', 'truncated (N of M bytes)', 'larger than written (N, not M
        bytes)', 'changed since it was written (same size, other sha256)'."""
        if now is None:
            return f"missing (written with {self.size:,} bytes)"
        if now.size < self.size:
            return f"truncated ({now.size:,} of {self.size:,} bytes)"
        if now.size > self.size:
            return f"larger than written ({now.size:,}, not {self.size:,} bytes)"
        if now.sha256 != self.sha256:
            return "changed since it was written (same size, other sha256)"
        return None


def digest_bytes(data: bytes) -> Digest:
    return Digest(len(data), hashlib.sha256(data).hexdigest())


def digest(path: Path) -> Digest | None:
    """The size and sha256 of the file at `path` now; None if there is no such file (a
    directory or anything else unreadable counts as none)."""
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    except OSError:  # absent, a directory, unreadable
        return None
    return Digest(size, h.hexdigest())

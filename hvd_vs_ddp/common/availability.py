"""`Availability`: the one answer to "can this run here?" (a backend, a launcher, a check).

Not an error: a truthy/falsy value with the reason when it is falsy. Torch-free.

    avail = launchers.available("torchrun")
    if not avail: print(avail.reason)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok

"""The project's one logger: `log = logging.getLogger("hvd_vs_ddp")`.

Library code reports notes and warnings through it, never through print. The CLI (and
the suites' conftest) call `configure()` once, which prints records to stderr as
`hvd-vs-ddp: <level>: <message>` (notes at INFO have no level word).

    from hvd_vs_ddp.common.log import log
    log.warning("ranks x threads exceed the cores")
"""
from __future__ import annotations

import logging
import sys

log = logging.getLogger("hvd_vs_ddp")


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        return f"hvd-vs-ddp: {level}{record.getMessage()}"


def configure(level: int = logging.INFO) -> None:
    """Send the project's records to stderr, once (idempotent)."""
    if not any(getattr(h, "_hvd_vs_ddp", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Format())
        handler._hvd_vs_ddp = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False

"""Interruption by a signal: Ctrl-C (SIGINT), SIGTERM (what Slurm sends at a job's time
limit) and SIGHUP (a closed terminal) all become one exception, `Interrupted`, that
carries the signal and the conventional exit status 128 + signal number (130, 143, 129).

`hvd-vs-ddp run` and `report` catch these signals so that they can end what they
started (a cell's whole process tree), record the run as interrupted and leave every
file whole before they exit; `deferred()` holds signals off while a set of files is
renamed into place, and `deferred(drop=True)` drops them during that clean-up.

    from hvd_vs_ddp.common.interrupt import Interrupted, raising
    with raising():          # SIGINT/SIGTERM/SIGHUP raise Interrupted inside
        work()
    # except Interrupted as exc: ...; return exc.exit_code
"""
from __future__ import annotations

import contextlib
import signal
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The process was asked to stop by a signal (SIGINT when raised by Python itself)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raise(signum, frame) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """Inside: SIGINT, SIGTERM and SIGHUP raise Interrupted; the old handlers after.
    A signal this process was started ignoring stays ignored (`nohup` ignores SIGHUP)."""
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        if previous[s] != signal.SIG_IGN:
            signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _drop(signum, frame) -> None:
    """A signal that arrives while the process is already stopping: nothing more to do."""


@contextlib.contextmanager
def deferred(drop: bool = False) -> Iterator[None]:
    """Inside: SIGINT, SIGTERM and SIGHUP cannot interrupt. A signal that arrives is
    raised as Interrupted once the block is done, or dropped with `drop=True` (for the
    clean-up of a process already stopping, which is bounded in time). Handlers, not a
    signal mask: a process-directed signal may be delivered to any thread, and a mask
    holds only one. Inside a dropping block, an inner block drops too."""
    if signal.getsignal(signal.SIGTERM) is _drop:
        yield
        return
    caught: list[int] = []
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        if previous[s] != signal.SIG_IGN:
            signal.signal(s, _drop if drop else (lambda signum, frame: caught.append(signum)))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if caught:
        raise Interrupted(caught[0])


def as_interrupted(exc: KeyboardInterrupt) -> Interrupted:
    """A plain KeyboardInterrupt (Python's own SIGINT handler) as Interrupted(SIGINT)."""
    return exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)

"""hvd_vs_ddp/common/interrupt.py: the three stop signals become Interrupted with 128 +
signal as the
exit status; deferred() holds them off (then raises) or drops them; a signal the process ignores
stays ignored.

    python -m pytest tests/unit/test_interrupt.py -q
"""
from __future__ import annotations

import os
import signal

import pytest

from hvd_vs_ddp.common.interrupt import SIGNALS, Interrupted, as_interrupted, deferred, raising


@pytest.fixture(autouse=True)
def default_signals():
    """The stop signals at their defaults during each test: a CI job started under nohup
    (or in the background) ignores SIGHUP (or SIGINT), and raising() keeps an ignored
    signal ignored, as it should."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                      (signal.SIGHUP, 129)])
def test_each_signal_raises_interrupted_with_its_exit_code(sig, code):
    before = signal.getsignal(sig)
    with pytest.raises(Interrupted) as caught:
        with raising():
            os.kill(os.getpid(), sig)  # the handler runs at the next bytecode
            pytest.fail("no Interrupted raised")
    assert caught.value.exit_code == code and caught.value.name == signal.Signals(sig).name
    assert signal.getsignal(sig) == before  # handlers restored


def test_deferred_drops_signals_even_with_other_threads_running():
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # a signal may land here
    other.start()
    with raising():
        with deferred(drop=True):
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            reached = True
        reached_after = True  # nothing raised on leaving deferred()
    stop.set()
    assert reached and reached_after


def test_deferred_raises_a_held_signal_after_the_block():
    done = []
    with pytest.raises(Interrupted) as caught:
        with raising():
            with deferred():
                os.kill(os.getpid(), signal.SIGHUP)
                for _ in range(1000):  # the handler has run by now; nothing raised yet
                    pass
                done.append(True)
    assert done == [True] and caught.value.exit_code == 129


def test_inside_a_dropping_block_an_inner_block_drops_too():
    with raising():
        with deferred(drop=True):
            with deferred():
                os.kill(os.getpid(), signal.SIGINT)
            after = True
    assert after


def test_an_ignored_signal_stays_ignored():
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with raising():
            os.kill(os.getpid(), signal.SIGHUP)
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


def test_plain_keyboard_interrupt_counts_as_sigint():
    assert as_interrupted(KeyboardInterrupt()).exit_code == 130

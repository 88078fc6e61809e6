"""Checks the pytest arguments `hvd-vs-ddp run --suite-args` passes to every cell.

`hvd_vs_ddp.harness.options.parse_argv` takes the suites' own options out of `--suite-args`; what
is left goes to pytest in every cell. `check(rest)` parses it with pytest's own parser
(pytest's options, its installed plugins' such as pytest-benchmark, the suites'
options and the collective plugin's `--test-time-limit`), in this process and
without collecting or running anything, so an unknown option, a missing or bad value
or a stray file name is one InputError line before any cell starts, not a failure of
every cell later. File names are refused: every cell chooses its suites' files.

    from hvd_vs_ddp.harness.pytest_args import check
    check(["-k", "mlp", "-x"])          # fine
    check(["--bogus"])                  # InputError: --suite-args: unrecognized arguments: --bogus
    hvd-vs-ddp run --suite-args "-k mlp --test-time-limit nan"    # refused, one line

hvd_vs_ddp.harness.options.parse_argv calls it with the suites' own options (add_to_pytest).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from hvd_vs_ddp.common.errors import InputError


def _parser(add_options: Callable[[Any], None] | None):
    """pytest's parser with every option a cell's pytest knows (pytest internals: the
    same calls pytest.main makes before it parses; constraints.txt pins pytest)."""
    from _pytest.config import get_config

    from hvd_vs_ddp.harness import collective_pytest

    config = get_config()
    config.pluginmanager.load_setuptools_entrypoints("pytest11")  # pytest-benchmark & co
    parser = config._parser
    collective_pytest.addoption(parser)  # as suites/conftest.py does
    if add_options is not None:
        add_options(parser)  # hvd_vs_ddp.harness.options.add_to_pytest (passed in: no import cycle)
    return parser


def check(rest: Sequence[str], add_options: Callable[[Any], None] | None = None) -> None:
    """InputError (one line) if pytest would refuse `rest`, or it names files.
    add_options adds the suites' own options (hvd_vs_ddp.harness.options.add_to_pytest)."""
    import pytest

    if not rest:
        return
    try:
        ns = _parser(add_options).parse(list(rest))
    except pytest.UsageError as err:
        lines = [ln for ln in str(err).splitlines() if ln.strip()]
        why = lines[-1].split("error: ", 1)[-1] if lines else "not valid pytest arguments"
        raise InputError(f"--suite-args: {why}") from None
    files = list(getattr(ns, "file_or_dir", None) or [])
    if files:
        raise InputError(f"--suite-args: {' '.join(map(repr, files))} is not an option; every "
                         "cell runs its own suites' files (choose tests with -k EXPR)")


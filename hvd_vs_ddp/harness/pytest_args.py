"""Checks the pytest arguments `hvd-vs-ddp run --suite-args` passes to every cell.

`hvd_vs_ddp.harness.option_parsing.parse_argv` takes the suites' options from `--suite-args`; what
is left goes to pytest in every cell. `check(rest)` parses it with pytest's own parser
loaded as a cell's pytest is (pytest's options without its cache provider, the plugins a
cell loads: pytest-benchmark and any the user's own `-p` names, the suites' options and
the collective plugin's `--test-time-limit`), in this process and without collecting or
running anything, so an unknown option (`--lf`, xdist's `-n`: a cell loads neither), a
missing or bad value, a plugin that cannot be imported, `-p no:` unloading
pytest-benchmark or a stray file name is one InputError line before any cell starts,
not a failure of every cell later. File names are refused: every cell chooses its
suites' files. So are
pytest's options that write or delete files (`--junitxml`, `--basetemp`, `--log-file`,
`--debug`, `--benchmark-json`, `--benchmark-save`, ..., and `-o log_file=` / `-o
cache_dir=`): a cell writes only into its run directory, which the runner owns
(hvd_vs_ddp/common/outputs.py), and `--basetemp` removes the folder it names.

    from hvd_vs_ddp.harness.pytest_args import check
    check(["-k", "mlp", "-x"])          # fine
    check(["--bogus"])                  # InputError: --suite-args: unrecognized arguments: --bogus
    hvd-vs-ddp run --suite-args "-k mlp --test-time-limit nan"    # refused, one line

hvd_vs_ddp.harness.option_parsing.parse_argv calls it with the suites' own options (add_to_pytest).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from hvd_vs_ddp.common.errors import InputError, one_line

BENCHMARK_PLUGIN = "pytest_benchmark.plugin"
GC_PAUSE_PLUGIN = "hvd_vs_ddp.harness.gc_pause"  # the start-up's imports without the cyclic GC
# The plugins a cell's pytest loads: pytest-benchmark alone, not whatever else the
# environment installed (pytest-cov or a property-testing plugin would hook into every
# measured test; loading them also cost each rank 1-1.5 s of CPU at start-up here), and
# the project's own start-up plugin, first.
# `hvd-vs-ddp run` puts these first in every cell's command line (pytest >= 8.4).
CELL_PLUGINS = ("--disable-plugin-autoload", "-p", GC_PAUSE_PLUGIN, "-p", BENCHMARK_PLUGIN)


def _parser(rest: Sequence[str], add_options: Callable[[Any], None] | None):
    """pytest's parser with every option a cell's pytest knows, its plugins loaded as a
    cell's are (hvd_vs_ddp/cli/matrix.py pytest_argv: pytest-benchmark alone, no cache
    provider, then the user's own `-p`); pytest internals: the same calls pytest.main
    makes before it parses; constraints.txt pins pytest."""
    import pytest
    from _pytest.config import get_config

    from hvd_vs_ddp.harness import collective_pytest

    as_a_cell = [*CELL_PLUGINS, "-p", "no:cacheprovider", *rest]
    config = get_config(as_a_cell)  # "-p no:NAME" blocks NAME before pytest's own load
    try:
        config.pluginmanager.consider_preparse(as_a_cell)  # "-p NAME" loads, in order
    except (ImportError, pytest.UsageError) as err:
        raise InputError(f"--suite-args: {one_line(err)}") from None
    if config.pluginmanager.get_plugin(BENCHMARK_PLUGIN) is None:
        raise InputError("--suite-args: that -p no:... unloads pytest-benchmark, which "
                         "records every cell's results")
    parser = config._parser
    collective_pytest.addoption(parser)  # as suites/conftest.py does
    if add_options is not None:
        add_options(parser)  # harness.option_parsing.add_to_pytest (passed in: no import cycle)
    return parser


def check(rest: Sequence[str], add_options: Callable[[Any], None] | None = None) -> None:
    """InputError (one line) if pytest would refuse `rest`, or it names files.
    add_options adds the suites' own options (hvd_vs_ddp.harness.option_parsing.add_to_pytest)."""
    import pytest

    if not rest:
        return
    parser = _parser(rest, add_options)
    try:
        ns = parser.parse(list(rest))
    except pytest.UsageError as err:
        lines = [ln for ln in str(err).splitlines() if ln.strip()]
        why = lines[-1].split("error: ", 1)[-1] if lines else "not valid pytest arguments"
        raise InputError(f"--suite-args: {why}") from None
    _refuse_writers(ns, parser.parse([]))
    files = list(getattr(ns, "file_or_dir", None) or [])
    if files:
        raise InputError(f"--suite-args: {' '.join(map(repr, files))} is not an option; every "
                         "cell runs its own suites' files (choose tests with -k EXPR)")


# pytest's (and its plugins') options that write or delete files: dest -> flag
WRITERS = {"xmlpath": "--junitxml", "basetemp": "--basetemp", "debug": "--debug",
           "log_file": "--log-file", "benchmark_json": "--benchmark-json",
           "benchmark_save": "--benchmark-save", "benchmark_autosave": "--benchmark-autosave",
           "benchmark_storage": "--benchmark-storage",
           "benchmark_histogram": "--benchmark-histogram",
           "benchmark_cprofile_dump": "--benchmark-cprofile-dump", "reportlog": "--report-log",
           "htmlpath": "--html", "resultlog": "--resultlog"}
INI_WRITERS = ("log_file", "cache_dir", "junit_suite_name")


def _refuse_writers(ns: Any, defaults: Any) -> None:
    for dest, flag in WRITERS.items():
        if getattr(ns, dest, None) != getattr(defaults, dest, None):
            how = "writes or deletes" if dest == "basetemp" else "writes"
            raise InputError(f"--suite-args: {flag} {how} files of its own; a cell writes "
                             "only into its run directory (results, logs, traces), which "
                             "hvd-vs-ddp run chooses")
    for entry in getattr(ns, "override_ini", None) or []:
        key = str(entry).partition("=")[0].strip()
        if key in INI_WRITERS[:2]:
            raise InputError(f"--suite-args: -o {key}=... writes files of its own; a cell "
                             "writes only into its run directory")

"""The command line's value types: each option is parsed once, by argparse, into its type.

Every `type=` of hvd_vs_ddp/cli/app.py's parser is one of these. They parse with the
project's one set of value parsers (hvd_vs_ddp/common/values.py) and look names up in
the registries that own them (backends, launchers, workloads, presets), so a bad value
is refused by argparse itself: one line, `hvd-vs-ddp: error: run: argument --repeat:
expected an integer >= 1`, exit 2, before anything else runs. What needs several
options together (a resumed run, the matrix) is judged by the command's request
(hvd_vs_ddp/cli/run_request.py).

    run.add_argument("--world-sizes", type=args.world_sizes)   # "1,2,4" -> (1, 2, 4)
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

from hvd_vs_ddp.common import values
from hvd_vs_ddp.projection import MIN_DRAWS

PROFILE_STEPS = 3  # run --profile: steps per throughput test under torch.profiler


def _typed(parse: Callable[[str], Any], name: str, number: bool = False
           ) -> Callable[[str], Any]:
    """`parse` as an argparse type: its ValueError becomes argparse's one-line error. A
    name or path must not be empty; a number's own message says what it expected."""
    def convert(text: str) -> Any:
        try:
            return parse(text if number else values.text(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = name
    return convert


given = _typed(lambda t: t, "given")  # a non-empty name or path


def _seconds(text: str) -> float:
    try:
        float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    try:
        value = values.seconds(text)
    except ValueError:
        raise ValueError(f"{text!r}: must be a number of seconds > 0") from None
    if value > MAX_SECONDS:  # 1e12 overflows the waits of Python's locks (about 292 years)
        raise ValueError(f"{text!r}: at most {MAX_SECONDS} seconds (a week)")
    return value


MAX_SECONDS = 604_800
MAX_REPEAT = 1000  # each repetition runs every cell again: 100000 was a typo's manifest


def _repetitions(text: str) -> int:
    value = values.positive_int(text, example="3")
    if value > MAX_REPEAT:
        raise ValueError(f"at most {MAX_REPEAT} (each repetition runs every cell again), "
                         "e.g. 3")
    return value


def _minutes(text: str) -> float:
    try:
        value = values.number(text, low=0, example="8")
    except ValueError:
        raise ValueError(f"{text!r}: expected a number of minutes > 0, e.g. 8") from None
    if value > MAX_SECONDS / 60:
        raise ValueError(f"{text!r}: at most {MAX_SECONDS // 60} minutes (a week)")
    return value


seconds = _typed(_seconds, "seconds", number=True)
minutes = _typed(_minutes, "minutes", number=True)  # run --budget
count = _typed(lambda t: values.positive_int(t, example="3"), "count", number=True)  # >= 1
repetitions = _typed(_repetitions, "repetitions", number=True)
integer = _typed(values.integer, "integer", number=True)
fraction = _typed(lambda t: values.fraction(t, example="0.05 for ±5%"), "fraction", number=True)


def _world_sizes(text: str) -> tuple[int, ...]:
    try:
        return tuple(values.int_list(text, minimum=1))
    except ValueError:
        raise ValueError("expected world sizes as comma-separated integers >= 1, "
                         "e.g. 1,2,4") from None


world_sizes = _typed(_world_sizes, "world_sizes")


def _price(text: str) -> float:
    try:
        return values.number(text, low=0)
    except ValueError:
        raise ValueError("expected a finite number > 0 (the price of one device for one "
                         "hour, e.g. 2.5)") from None


def _epoch_samples(text: str) -> int:
    try:
        return values.positive_int(text)
    except ValueError:
        raise ValueError("expected a whole number of samples >= 1 (default 1,281,167, "
                         "ImageNet-1k's training set)") from None


price = _typed(_price, "price", number=True)
epoch_samples = _typed(_epoch_samples, "epoch_samples", number=True)


def _known(what: str, known: Callable[[], Any]) -> Callable[[str], tuple[str, ...]]:
    return _typed(lambda t: tuple(values.names(t, known(), what)), f"{what}s")


def _backends() -> list[str]:
    from hvd_vs_ddp.backends import catalog
    return list(catalog.NAMES)


def _launchers() -> list[str]:
    from hvd_vs_ddp.backends import launchers
    return list(launchers.NAMES)


def _presets() -> list[str]:
    from hvd_vs_ddp.cli import presets
    return list(presets.PRESETS)


# doctor --selftest --only: names checked against the checks this machine has (selftest)
check_ids = _typed(lambda t: tuple(values.names(t, None, "check id")), "check_ids")
backends = _known("backend", _backends)
launchers = _known("launcher", _launchers)


def _suites() -> list[str]:
    from hvd_vs_ddp.harness.options import SUITES
    return list(SUITES)


suites = _known("suite", _suites)  # which of them a preset has: run_request.py


def _inputs() -> list[str]:
    from hvd_vs_ddp.common.input_modes import INPUT_MODES
    return list(INPUT_MODES)


inputs = _known("input", _inputs)  # run --input memory,jpeg: the input-pipeline axis


def _link_rates(text: str) -> tuple[str, ...]:
    """run --link-rate loopback,0.5gbit -> ('loopback', '500mbit') (hvd_vs_ddp/links/)."""
    from hvd_vs_ddp.links import rates

    try:
        return rates.parse_links(text)
    except rates.LinkError as exc:
        raise ValueError(str(exc)) from None


def _emulated_hosts(text: str) -> int:
    value = values.positive_int(text, example="2")
    if value != 2:
        raise ValueError(f"{value}: 2 hosts (one rank each, one veth pair between them); "
                         "more are not built yet")
    return value


link_rates = _typed(_link_rates, "link_rates")            # run --link-rate
emulated_hosts = _typed(_emulated_hosts, "emulated_hosts", number=True)  # --emulate-hosts


def _workloads(text: str) -> tuple[str, ...]:
    """Workload names or specs (hvd_vs_ddp/workloads/external.py), each resolved (its
    module imported) and in its canonical form (a file's path made absolute)."""
    from hvd_vs_ddp.common.errors import InputError
    from hvd_vs_ddp.workloads import registry

    try:
        return tuple(dict.fromkeys(registry.canonical(w)
                                   for w in values.names(text, None, "workload")))
    except InputError as exc:
        raise ValueError(str(exc)) from None


workloads = _typed(_workloads, "workloads")


def _preset(text: str) -> str:
    if "," in text:
        raise ValueError(f"one preset, not a list; known presets: {', '.join(_presets())}")
    return values.names(text, _presets(), "preset")[0]


preset = _typed(_preset, "preset")


# -- project ----------------------------------------------------------------
MAX_DEVICES = 1_000_000   # a device count past this is a typo, not a cluster
MAX_DRAWS = 20_000        # 400 gives a 95% band to about 1%


def _devices(text: str) -> tuple[int, ...]:
    return tuple(values.int_list(text, minimum=1, maximum=MAX_DEVICES, example="8,64,512"))


def _draws(text: str) -> int:
    value = values.positive_int(text, example="400")
    if value < MIN_DRAWS:
        raise ValueError(f"at least {MIN_DRAWS}: a 95% band from fewer draws has no draw in "
                         "its tails, and its verdict would look firmer than it is")
    if value > MAX_DRAWS:
        raise ValueError(f"at most {MAX_DRAWS} (400 gives a 95% band to about 1%)")
    return value


MAX_STEP_MS = 86_400_000.0  # a day: one device's step time beyond it is a typo (1e308
#                            overflowed the projection into a warning and a 0 exit)


def _milliseconds(text: str) -> float:
    value = values.number(text, low=0, example="97")
    if value > MAX_STEP_MS:
        raise ValueError(f"a number > 0 and at most {MAX_STEP_MS:.0f} (a day), e.g. 97")
    return value


devices = _typed(_devices, "devices")
draws = _typed(_draws, "draws", number=True)
milliseconds = _typed(_milliseconds, "milliseconds", number=True)
workloads_of_a_run = _typed(lambda t: tuple(values.names(t, None, "workload")),
                            "workloads_of_a_run")  # judged against the run's own

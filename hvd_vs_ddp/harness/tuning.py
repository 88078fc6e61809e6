"""Horovod autotune inside the throughput suite: where its log goes, what it chose.

A knob set with `autotune` runs Horovod with HOROVOD_AUTOTUNE=1 and its log written
beside the results file as `<results stem>.<workload>.horovod-autotune.csv` (one
Horovod start per process: a second workload in the same process is skipped, since
Horovod reads the variables once). A knob set with `autotuned` runs at the fusion
threshold and cycle time that log chose; `--horovod-autotuned-from STEM` names the
autotune cell's results stem (the tune preset passes it).

    pytest suites/test_throughput.py --backends horovod --knob-set hvd-autotune \
        --workloads mlp --benchmark-json run/a.json      # -> run/a.mlp.horovod-autotune.csv
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from hvd_vs_ddp.common.horovod_autotune import SUFFIX, AutotuneLogError, read
from hvd_vs_ddp.harness.knobs import Autotuned, KnobSet
from hvd_vs_ddp.workloads.external import slug  # a workload spec in file-name-safe form

if TYPE_CHECKING:
    from hvd_vs_ddp.harness.suite_run import SuiteRun

NO_FUSION_MB = 2.0 ** -20  # Horovod's "0 MiB" (fusion off) as the smallest threshold: 1 byte


def set_budget(knob_set: str) -> None:
    """Horovod reads HOROVOD_AUTOTUNE_WARMUP_SAMPLES / _STEPS_PER_SAMPLE / _BAYES_OPT_MAX_
    SAMPLES when its library loads (its global state is built then, before hvd.init()):
    set them before anything imports horovod.torch, where a selected set autotunes. The
    user's own values win."""
    from hvd_vs_ddp.backends.horovod import AUTOTUNE_BUDGET
    from hvd_vs_ddp.harness.knobs import SETS, by_name
    sets = SETS[knob_set] if knob_set in SETS else (by_name(knob_set),)
    if any(k.autotune for k in sets):
        for var, value in AUTOTUNE_BUDGET.items():
            os.environ.setdefault(var, value)


def _results_dir(suite: "SuiteRun", what: str) -> Path:
    json_path = suite.results_json
    if json_path is None:
        raise pytest.UsageError(f"{what}: needs --benchmark-json (the autotune log lies "
                                "beside it)")
    return Path(json_path).resolve()


def log_path(results_json: Path, workload: str) -> Path:
    return results_json.with_name(f"{results_json.stem}.{slug(workload)}{SUFFIX}")


def autotune_inputs(suite: "SuiteRun", knobs: KnobSet, workload: str
                    ) -> tuple[str | None, Autotuned | None]:
    """(autotune log to write, parameters autotune chose) for this knob set and workload."""
    if knobs.autotune:
        return str(log_path(_results_dir(suite, f"knob set {knobs.name}"), workload)), None
    if not knobs.autotuned:
        return None, None
    stem = suite.options.horovod_autotuned_from
    if not stem:
        pytest.skip(f"knob set {knobs.name}: needs --horovod-autotuned-from (the autotune "
                    "cell's results stem)")
    here = _results_dir(suite, f"knob set {knobs.name}")
    # The cell's own log, or (repetitions: <stem>.rK) the newest, this round's.
    logs = [log_path(here.with_name(f"{stem}.json"), workload),
            *here.parent.glob(f"{stem}.r*.{slug(workload)}{SUFFIX}")]
    found = [p for p in logs if p.is_file()]
    path = max(found, key=lambda p: p.stat().st_mtime) if found else logs[0]
    try:
        best = read(path).best
    except AutotuneLogError as exc:
        pytest.fail(f"knob set {knobs.name}: {exc}")
    return None, Autotuned(fusion_mb=max(best.fusion_mb, NO_FUSION_MB),
                           cycle_time_ms=best.cycle_time_ms)

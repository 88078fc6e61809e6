"""Where Horovod writes its timeline in a suite job, and switching it on.

`--horovod-timeline FILE|auto` (hvd_vs_ddp/harness/options.py) sets HOROVOD_TIMELINE and
HOROVOD_TIMELINE_MARK_CYCLES=1 for the job before Horovod starts; `auto` puts the
file beside --benchmark-json as <stem>.horovod-timeline.json, so a cell run by
`hvd-vs-ddp run` leaves it in the run directory's cells/. Horovod's coordinator
(rank 0) writes it: Chrome trace JSON that Perfetto and chrome://tracing open,
parsed by hvd_vs_ddp/reports/horovod_timeline.py.

Horovod's timeline writer thread polls its queue without sleeping (a busy loop with
yield, horovod/common/timeline.cc WriterLoop) from hvd.init() until the process ends,
even when the timeline is started later with hvd.start_timeline(): a job with the
timeline is an instrumented job whose steps are never timed for the comparison.

    pytest suites/test_throughput.py --backends horovod --horovod-timeline auto \
        --benchmark-json out.json          # -> out.horovod-timeline.json
"""
from __future__ import annotations

import os
from pathlib import Path

from hvd_vs_ddp.common import output_formats, outputs
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.run_folder import check_output

SUFFIX = ".horovod-timeline.json"


def target(option: str | None, benchmark_json: str | os.PathLike | None,
           owner: str | None = None) -> tuple[Path, str] | None:
    """(absolute file, how the results refer to it: relative to the results file's folder
    when it lies there, else absolute); None when the option is not given. The file may
    replace only a Horovod timeline, and lie inside a run directory only when `owner`
    (--run-dir) is that run (the output gate, hvd_vs_ddp/common/outputs.py)."""
    if not option:
        return None
    results: Path | None
    if option == "auto":
        if benchmark_json is None:
            raise InputError("--horovod-timeline auto: needs --benchmark-json (the timeline "
                             "goes beside it); or give a file name")
        results = Path(benchmark_json).resolve()
        path = results.with_name(results.stem + SUFFIX)
    else:
        path = Path(option).expanduser().resolve()
        results = Path(benchmark_json).resolve() if benchmark_json is not None else None
    if not path.parent.is_dir():
        raise InputError(f"--horovod-timeline {option}: folder {path.parent} does not exist")
    try:
        check_output(path, output_formats.HOROVOD_TIMELINE, owner)
    except outputs.OutputRefused as exc:
        raise InputError(f"--horovod-timeline {exc}") from None
    ref = (path.name if results is not None and path.parent == results.parent
           else str(path))
    return path, ref


def enable(path: Path) -> None:
    """Before hvd.init(): Horovod reads these once, at start."""
    os.environ["HOROVOD_TIMELINE"] = str(path)
    os.environ["HOROVOD_TIMELINE_MARK_CYCLES"] = "1"

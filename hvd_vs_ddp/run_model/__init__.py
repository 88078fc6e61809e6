"""The typed run model: what the report and the projection both read.

A run directory (manifest.json, cells/*.json) becomes a `Run` of `Cell`s of `Benchmark`s,
each carrying its typed record from the results format (hvd_vs_ddp/results_schema/).
`disturbed` leaves out the timings of repetitions that other work on the host slowed
down; `stats` is the one statistics module (medians, the two-level bootstrap of
repetitions then steps, ratio intervals). Torch-free; imports neither the report nor
the projection, which both build on it.

    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    run = load_judged_run("runs/<name>")   # as every verdict reads it (load_run: as stored)
"""
from hvd_vs_ddp.run_model.load import Benchmark, Cell, Run, load_run

__all__ = ["Benchmark", "Cell", "Run", "load_run"]

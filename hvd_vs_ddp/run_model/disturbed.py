"""Repetitions disturbed by other work on the host are left out of the timings.

`hvd-vs-ddp run` records per repetition the *foreign load*: cores' worth of CPU that
processes other than the cell's used on the host while it ran (hvd_vs_ddp/common/cpu_load.py).
On a machine whose ranks fill the cores, one such core slows a repetition by a factor
that has nothing to do with the library measured (seen here: 2x to 30x, while other
test suites ran). A repetition whose foreign load exceeds `MAX_SHARE` of the host's
cores is *disturbed*: its throughput and compute-only timings are left out of the
medians, intervals and verdicts when at least two undisturbed repetitions of the cell
remain; otherwise all are kept and a note says the intervals include that load. The
other suites of a first repetition (convergence, collectives) are always kept.
`report --keep-disturbed` keeps everything. Every decision is listed in the report's
notes.

    from hvd_vs_ddp.run_model.disturbed import load_judged_run, still_disturbed
    run = load_judged_run("runs/<name>")      # loaded, disturbed repetitions left out,
                                              # the decisions in run.notes
    still_disturbed(run)                      # the cell ids whose timings kept such load

`load_judged_run` is the one way every reader (report, verdicts, budget, projection, A/A
table, the benchmarks) loads a run; `leave_out_disturbed` is the step it adds to
`load_run`.
"""
from __future__ import annotations

import os
from pathlib import Path

from hvd_vs_ddp.run_model.load import Run, load_run

MAX_SHARE = 0.10          # of the host's cores: above it a repetition is disturbed
TIMED_KINDS = ("throughput", "compute_only")


def _cores(run) -> int:
    hw = run.hardware
    try:
        return max(1, int(hw.get("cores") or os.cpu_count() or 1))
    except (TypeError, ValueError):
        return os.cpu_count() or 1


def _repetitions(cell, limit: float) -> tuple[list, list]:
    """The cell's passed repetitions, and those of them disturbed (foreign load > limit)."""
    entry = cell.entry
    reps = [r for r in (entry.repeats or []) if r.status == "passed"] if entry else []
    return reps, [r for r in reps if r.foreign_load is not None and r.foreign_load > limit]


def still_disturbed(run, max_share: float = MAX_SHARE) -> list[str]:
    """The cells of `run` whose timings still hold a disturbed repetition (after
    leave_out_disturbed: too few undisturbed ones to leave it out, or kept on request):
    their medians carry other work's load, by an amount nothing in the run measures."""
    limit = max_share * _cores(run)
    out = []
    for cell in run.cells:
        bad = {r.rep for r in _repetitions(cell, limit)[1]}
        if bad & {b.rep for b in cell.benchmarks if b.kind in TIMED_KINDS}:
            out.append(cell.id)
    return out


def leave_out_disturbed(run, keep: bool = False, max_share: float = MAX_SHARE) -> list[str]:
    """Drop the timings of disturbed repetitions from `run` (hvd_vs_ddp.run_model.load.Run);
    return the notes saying what was left out or kept, and why."""
    cores = _cores(run)
    limit = max_share * cores
    notes: list[str] = []
    for cell in run.cells:
        reps, bad = _repetitions(cell, limit)
        if not bad:
            continue
        what = ", ".join(f"r{r.rep} ({r.foreign_load:g} cores)" for r in bad)
        clean = len(reps) - len(bad)
        if keep or clean < 2:
            why = ("kept (--keep-disturbed)" if keep else
                   f"kept: only {clean} undisturbed repetition(s); its intervals include "
                   "that load")
            notes.append(f"{run.name}: {cell.id}: other work used more than {limit:g} of "
                         f"the host's {cores} cores during {what}; {why}.")
            continue
        out = {r.rep for r in bad}
        cell.benchmarks = [b for b in cell.benchmarks
                           if not (b.rep in out and b.kind in TIMED_KINDS)]
        notes.append(f"{run.name}: {cell.id}: timings of {what} left out: other work "
                     f"used more than {limit:g} of the host's {cores} cores meanwhile "
                     f"({clean} undisturbed repetitions kept; report --keep-disturbed "
                     "keeps them).")
    return notes


def load_judged_run(run_dir: Path | str, name: str | None = None, keep: bool = False) -> Run:
    """The run at `run_dir` as every verdict reads it: loaded (run_model.load.load_run;
    raises ResultsError as it does), its disturbed repetitions left out (kept with
    `keep`), the notes saying so in run.disturbed_notes and appended to run.notes."""
    run = load_run(Path(run_dir), name)
    run.disturbed_notes = leave_out_disturbed(run, keep=keep)
    run.notes += run.disturbed_notes
    return run

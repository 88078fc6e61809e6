"""The report's one typed context: everything the sections read, computed once.

build_report loads the runs, then `report_context` turns them into frames, ratios,
verdicts, the training and communication figures, the cost frame and the recovery
trials' verdicts; every section of the report (hvd_vs_ddp/reports/sections/) is then one
`build(context)` over this object, and the answer box and verdicts.json read it too.
Nothing here is recomputed per section.

    from hvd_vs_ddp.reports.context import report_context
    ctx = report_context(runs, margin=0.05)
    ctx.cmp            # Horovod vs DDP per case and world size (hvd_vs_ddp.reports.compare)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from hvd_vs_ddp.reports import compare, cost
from hvd_vs_ddp.reports.figures import Figures, training_figures
from hvd_vs_ddp.reports.figures_comm import comm_figures
from hvd_vs_ddp.reports.recovery_section import recovery_section
from hvd_vs_ddp.reports.render import Section
from hvd_vs_ddp.run_model.frames import Data, build_frames
from hvd_vs_ddp.run_model.load import Run
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp


@dataclass(frozen=True)
class Recovery:
    """The recovery trials, judged once: the section, its headlines, its verdicts.json part."""
    section: Section | None
    headlines: list[str]
    doc: dict[str, Any]


@dataclass(frozen=True)
class ReportContext:
    runs: list[Run]
    data: Data
    margin: float
    tp: pd.DataFrame                 # throughput with scaling columns (compare.add_scaling)
    cmp: pd.DataFrame                # Horovod vs DDP (run_model.pairs.hvd_vs_ddp)
    exposed: pd.DataFrame            # exposed communication (compare.exposed_comm)
    before_after: pd.DataFrame | None  # two runs only: B / A (compare.before_after)
    before_after_notes: list[str]
    cost: pd.DataFrame               # cost.cost_frame (empty without a price or energy)
    figs: Figures                    # sections add their own figures to it as they build
    recovery: Recovery

    @property
    def multi(self) -> bool:
        return len(self.runs) > 1


def report_context(runs: list[Run], margin: float, price: float | None = None,
                   epoch_samples: int = cost.IMAGENET_1K_TRAIN) -> ReportContext:
    """Everything the sections read, from loaded runs (disturbed repetitions already left
    out) and checked settings."""
    data = build_frames(runs)
    tp = compare.add_scaling(data.throughput)
    cmp = hvd_vs_ddp(tp, margin)
    ex = compare.exposed_comm(data)
    ba, ba_notes = (compare.before_after(tp, runs[0].name, runs[1].name, margin)
                    if len(runs) == 2 else (None, []))
    figs = Figures()
    multi = len(runs) > 1
    training_figures(tp, data.convergence, figs, multi)
    comm_figures(data.collective, data.memcpy, ex, tp, figs, multi)
    cf = cost.cost_frame(tp, data.throughput_reps, price, epoch_samples)
    recovered, heads, doc = recovery_section(data, figs, margin)
    return ReportContext(runs, data, margin, tp, cmp, ex, ba, ba_notes, cf, figs,
                         Recovery(recovered, heads, doc))

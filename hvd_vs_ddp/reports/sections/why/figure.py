"""The "where the step goes" figure: per case and world size, one group of bars per
backend: the subtraction (compute-only + exposed communication, with its 95% interval),
the library's own account (DDP: forward + backward compute, exposed communication, the
rest; Horovod: the rest of the step, the timeline's exposed tail) and, beside them,
the communication hidden under backward. Colours from hvd_vs_ddp.reports.theme (the backend's
colour for its communication); absent data -> a one-line note.

    from hvd_vs_ddp.reports.sections.why.figure import why_figure
    why_figure(why.steps, figs, multi_run)      # appends to figs.items / figs.omitted
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from hvd_vs_ddp.reports.figures import Figures, facet_grid
from hvd_vs_ddp.reports.theme import color, style

GREY, LIGHT, HATCH = "#9A9A9A", "#D5D5D5", "////"
NAME = "where_step_goes"


def _val(r: pd.Series, key: str) -> float:
    v = r.get(key)
    return float(v) if v is not None and pd.notna(v) else np.nan


def why_figure(steps: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    with style():
        own = steps[steps.get("own_exposed_s", pd.Series(dtype=float)).notna()] \
            if not steps.empty and "own_exposed_s" in steps else pd.DataFrame()
        if own.empty:
            figs.omit(NAME, "Where the step goes", "no DDP statistics or Horovod timeline "
                      "in the results (run the throughput suite with --ddp-sample-rate >= 1, "
                      "and the Horovod timeline cells)")
            return
        facets = list(own.groupby(["run", "case", "world_size"], sort=True))
        fig, axes = facet_grid(len(facets), ncols=min(2, len(facets)), w=6.2, h=3.8)
        for ax, ((run, case, ws), g) in zip(axes, facets):
            ticks = []
            for i, (_, r) in enumerate(g.iterrows()):
                x, c = i * 4.0, color(r["label"])
                step = _val(r, "step_s") * 1e3
                comp, sub = _val(r, "compute_s") * 1e3, _val(r, "sub_exposed_s") * 1e3
                if np.isfinite(comp):  # the subtraction
                    ax.bar(x, comp, color=LIGHT, width=0.9, edgecolor="white")
                    ax.bar(x, max(sub, 0), bottom=comp, color=c, alpha=0.45, width=0.9,
                           edgecolor="white")
                    lo, hi = _val(r, "sub_lo") * 1e3, _val(r, "sub_hi") * 1e3
                    # a median of few steps may lie outside its bootstrap interval
                    # (1 round of 1 step): matplotlib refuses a negative error bar
                    ax.errorbar(x, comp + sub, yerr=[[max(sub - lo, 0)], [max(hi - sub, 0)]],
                                color="black", capsize=3, lw=1)
                exposed = max(_val(r, "own_exposed_s") * 1e3, 0)
                compute = _val(r, "own_compute_s") * 1e3
                if np.isfinite(compute):  # DDP: compute | exposed | rest
                    rest = max(step - compute - exposed, 0)
                    ax.bar(x + 1, compute, color=GREY, width=0.9, edgecolor="white")
                    ax.bar(x + 1, exposed, bottom=compute, color=c, width=0.9,
                           edgecolor="white")
                    ax.bar(x + 1, rest, bottom=compute + exposed, color="white", width=0.9,
                           edgecolor=GREY, hatch="..")
                else:  # Horovod: rest | exposed (timeline)
                    ax.bar(x + 1, max(step - exposed, 0), color="white", width=0.9,
                           edgecolor=GREY, hatch="..")
                    ax.bar(x + 1, exposed, bottom=max(step - exposed, 0), color=c, width=0.9,
                           edgecolor="white")
                ax.bar(x + 2, _val(r, "own_hidden_s") * 1e3, color="white", edgecolor=c,
                       hatch=HATCH, width=0.9)
                ticks += [(x, "sub."), (x + 1, "own"), (x + 2, "hidden")]
                ax.text(x + 1, -0.16, r["series"], transform=ax.get_xaxis_transform(),
                        ha="center", va="top", fontsize=8, color=c, fontweight="bold")
            ax.set_xticks([t for t, _ in ticks], [lab for _, lab in ticks], fontsize=7.5)
            ax.set(ylabel="ms per step", title=f"{case}, {ws} ranks"
                   + (f" ({run})" if multi_run else ""))
        handles = [Patch(color=LIGHT, label="compute-only step (subtraction)"),
                   Patch(facecolor="#777777", alpha=0.45, label="exposed comm, subtraction "
                         "(95% interval)"),
                   Patch(color=GREY, label="forward + backward compute (DDP's own)"),
                   Patch(color="#555555", label="exposed comm, library's own (backend colour)"),
                   Patch(facecolor="white", edgecolor=GREY, hatch="..",
                         label="rest of the step (optimizer, data, framework;\n"
                               "Horovod: its compute too, not split)"),
                   Patch(facecolor="white", edgecolor="#555555", hatch=HATCH,
                         label="comm hidden under backward (library's own)")]
        fig.legend(handles=handles, loc="outside right upper", fontsize=8)
        figs.add(NAME, "Where the step goes", fig,
                 "Per backend three bars. sub.: the median compute-only step plus the "
                 "exposed communication by subtraction (median step - median compute-only "
                 "step) with its 95% two-level bootstrap interval. own: the library's own "
                 "account of the median step: DDP's forward+backward compute and "
                 "communication after backward (backward comm - overlap), the rest; "
                 "Horovod's timeline: from the last rank's last gradient to the end of the "
                 "last allreduce (measured in the instrumented timeline run). "
                 "hidden: communication that ran under backward compute.")

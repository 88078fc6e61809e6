"""Training figures: throughput and scaling vs world size, step-time distributions,
loss vs step and vs wall time. Shared helpers (Fig, Figures, facets, legend) too; the
PNG bytes come from hvd_vs_ddp/reports/png.py.

Every figure uses hvd_vs_ddp.reports.theme: one colour per backend everywhere. A figure whose
data is absent is not drawn; a one-line note says so (figures never raise on
missing data). Figures are matplotlib Figure objects (no pyplot, no global state)
saved to PNG bytes.

    from hvd_vs_ddp.reports.figures import Figures, training_figures
    figs = Figures(); training_figures(data, scaled_tp, figs)   # figs.items, figs.notes
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from hvd_vs_ddp.reports.png import to_png
from hvd_vs_ddp.reports.theme import REFERENCE, color, linestyle, style
from hvd_vs_ddp.run_model.labels import order


@dataclass
class Fig:
    name: str       # file stem, e.g. "throughput"
    title: str
    png: bytes
    caption: str = ""
    group: str = ""  # figures of one group are shown together (e.g. "monitor")


@dataclass
class Figures:
    items: list[Fig] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    omitted: dict[str, str] = field(default_factory=dict)  # figure name -> one-line note

    def add(self, name: str, title: str, fig: Figure, caption: str = "", group: str = ""):
        self.items.append(Fig(name, title, to_png(fig), caption, group))

    def omit(self, name: str, title: str, why: str) -> None:
        self.omitted[name] = f"{title}: not drawn, {why}."

    def get(self, name: str):
        """The figure called name, or its one-line omission note, or None."""
        hit = [f for f in self.items if f.name == name]
        return hit[0] if hit else self.omitted.get(name)

    def group(self, group: str) -> list[Fig]:
        return [f for f in self.items if f.group == group]


def n_cols(df: pd.DataFrame, most: int = 3) -> int:
    """One column per case (up to `most`), so that with several runs each row is a run."""
    return max(1, min(most, df["case"].nunique()))


def facet_grid(n: int, ncols: int = 3, w: float = 4.4, h: float = 3.3):
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(w * ncols + 1.8, h * nrows + 0.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, list(axes[:n])


def shared_legend(fig: Figure, axes, title: str | None = None) -> None:
    """One legend for the whole figure, outside the axes, no duplicates."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if not lab.startswith("_"):
                seen.setdefault(lab, h)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside right upper", title=title)


MARKERS = ("o", "s", "^", "D", "v")


def _variant(s: str, names: list[str], lab: dict[str, str]) -> int:
    """0 for a backend's first series, 1, 2... for the same backend via other launchers."""
    return [n for n in names if lab[n] == lab[s]].index(s)


def series_palette(df: pd.DataFrame) -> tuple[list[str], dict[str, str]]:
    """Series in the fixed backend order, each with its backend's colour (a darker shade
    of it for the same backend under a second launcher)."""
    import seaborn as sns  # only where a figure is drawn (theme.style)

    lab = dict(zip(df["series"], df["label"]))
    names = sorted(lab, key=lambda s: (order(lab.values()).index(lab[s]), s))
    pal = {}
    for s in names:
        k = _variant(s, names, lab)
        pal[s] = color(lab[s]) if k == 0 else sns.dark_palette(color(lab[s]), 4)[3 - k % 3]
    return names, pal


def series_markers(df: pd.DataFrame, names: list[str]) -> dict[str, str]:
    lab = dict(zip(df["series"], df["label"]))
    return {s: MARKERS[_variant(s, names, lab) % len(MARKERS)] for s in names}


def _facets(df: pd.DataFrame, multi_run: bool):
    for (run, case), g in df.groupby(["run", "case"], sort=True):
        yield (f"{case} ({run})" if multi_run else case), g


def throughput_fig(tp: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    facets = list(_facets(tp, multi_run))
    fig, axes = facet_grid(len(facets), n_cols(tp))
    for ax, (title, g) in zip(axes, facets):
        names, pal = series_palette(g)
        mk = series_markers(g, names)
        for s in names:
            d = g[g["series"] == s].sort_values("world_size")
            y = d["sps_median"].to_numpy()
            err = [y - d["sps_q25"].to_numpy(), d["sps_q75"].to_numpy() - y]
            ax.errorbar(d["world_size"], y, yerr=err, color=pal[s], marker=mk[s], ms=5,
                        capsize=3, lw=1.8, label=s, ls=linestyle(d["label"].iloc[0]))
        ws = np.array(sorted(g["world_size"].unique()))
        base = g.dropna(subset=["baseline_sps"])
        if not base.empty and (base["baseline_from"] == "single np=1").any():
            b = base[base["baseline_from"] == "single np=1"]["baseline_sps"].iloc[0]
            ax.plot(ws, b * ws, ls="--", color="#555555", lw=1.2,
                    label="ideal linear (single np=1)")
        else:
            for s in names:
                d = base[base["series"] == s]
                if not d.empty:
                    ax.plot(ws, d["baseline_sps"].iloc[0] * ws, ls=":", color=pal[s], lw=1.2,
                            label="ideal linear (own np=1)")
        ax.set(title=title, xlabel="world size (ranks)", ylabel="samples/s (median, IQR)",
               xticks=ws)
        ax.set_ylim(bottom=0)
    shared_legend(fig, axes, "backend")
    cap = ("Median samples/s with IQR bars; Horovod dash-dot, DDP solid; dashed: linear "
           "scaling from the np=1 value.")
    if tp["baseline_sps"].isna().all():
        cap = "Median samples/s with IQR bars; no np=1 cell, so no ideal-scaling line."
    figs.add("throughput", "Throughput vs world size", fig, cap)


def efficiency_fig(tp: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    tp = tp.dropna(subset=["efficiency"])
    if tp.empty:
        figs.omit("scaling_efficiency", "Scaling efficiency",
                  "no np=1 throughput cell to scale from")
        return
    facets = list(_facets(tp, multi_run))
    fig, axes = facet_grid(len(facets), n_cols(tp))
    for ax, (title, g) in zip(axes, facets):
        names, pal = series_palette(g)
        mk = series_markers(g, names)
        for s in names:
            d = g[g["series"] == s].sort_values("world_size")
            ax.plot(d["world_size"], d["efficiency"], color=pal[s], marker=mk[s], lw=1.8,
                    label=s, ls=linestyle(d["label"].iloc[0]))
        ax.axhline(1.0, ls="--", color="#555555", lw=1.2, label="ideal (1.0)")
        ax.set(title=title, xlabel="world size (ranks)", ylabel="scaling efficiency",
               xticks=sorted(g["world_size"].unique()))
        ax.set_ylim(0, max(1.15, float(g["efficiency"].max()) * 1.1))
    shared_legend(fig, axes, "backend")
    figs.add("scaling_efficiency", "Scaling efficiency", fig,
             "samples/s / (world size x np=1 samples/s); 1.0 is perfect linear scaling. "
             "Horovod dash-dot, DDP solid.")


def slots(g: pd.DataFrame, names: list[str]):
    """x slots grouped by world size (a gap between groups): (slot order, (x, label) ticks).
    A slot is "ws|series"; gaps are "_gapN" (empty)."""
    order_, ticks = [], []
    for i, ws in enumerate(sorted(g["world_size"].unique())):
        if i:
            order_.append(f"_gap{i}")
        start = len(order_)
        present = set(g.loc[g["world_size"] == ws, "series"])
        order_ += [f"{ws}|{s}" for s in names if s in present]
        ticks.append(((start + len(order_) - 1) / 2, f"{ws} rank" + ("s" if ws != 1 else "")))
    return order_, ticks


def step_time_fig(tp: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    long = pd.DataFrame([{"run": r["run"], "case": r["case"], "series": r["series"],
                          "label": r["label"], "world_size": r["world_size"],
                          "slot": f"{r['world_size']}|{r['series']}", "step (ms)": v * 1e3}
                         for _, r in tp.iterrows() for v in r["steps"]])
    import seaborn as sns  # only where a figure is drawn (theme.style)

    facets = list(_facets(long, multi_run))
    fig, axes = facet_grid(len(facets), n_cols(long))
    for ax, (title, g) in zip(axes, facets):
        names, pal = series_palette(g)
        slot_order, ticks = slots(g, names)
        with warnings.catch_warnings():  # seaborn 0.13 passes matplotlib's deprecated vert=
            warnings.simplefilter("ignore", DeprecationWarning)
            sns.boxplot(data=g, x="slot", y="step (ms)", order=slot_order, hue="series",
                        hue_order=names, palette=pal, dodge=False, saturation=1, ax=ax,
                        fliersize=2, linewidth=1, width=0.7, linecolor="#333333",
                        medianprops={"color": "white", "linewidth": 2})
        ax.set_xticks([t for t, _ in ticks], [lab for _, lab in ticks])
        ax.set(title=title, xlabel="world size", ylabel="step time (ms)")
        ax.set_ylim(bottom=0)
    shared_legend(fig, axes, "backend")
    figs.add("step_times", "Step-time distributions", fig,
             "Every timed step (the slowest rank's time), grouped by world size; box = IQR "
             "with the median in white, whiskers = 1.5 IQR.")


def loss_fig(cv: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    groups = list(cv.groupby(["run", "workload", "world_size"], sort=True))
    fig = Figure(figsize=(15, 3.4 * len(groups) + 0.4), layout="constrained")
    axes = fig.subplots(len(groups), 3, squeeze=False)
    no_wall = ref_no_wall = False
    for (ax_s, ax_t, ax_d), ((run, wl, ws), g) in zip(axes, groups):
        ref = g["reference_losses"].iloc[0]
        for lab in order(g["label"]):
            r = g[g["label"] == lab].iloc[0]
            steps = np.arange(1, r["losses"].size + 1)
            ax_s.plot(steps, r["losses"], color=color(lab), lw=1.6, label=lab)
            if r["wall_times"].size == r["losses"].size:
                ax_t.plot(r["wall_times"], r["losses"], color=color(lab), lw=1.6, label=lab)
            else:
                no_wall = True
            n = min(ref.size, r["losses"].size)
            dev = np.abs(r["losses"][:n] - ref[:n]) / np.abs(ref[:n])
            ax_d.plot(steps[:n], dev, color=color(lab), lw=1.4, label=lab)
            ax_d.axhline(r["tolerance"], color="#555555", ls="--", lw=1.2, label="tolerance")
        ref_style = dict(color="black", ls=(0, (4, 3)), lw=1.6, label=REFERENCE, zorder=5)
        ax_s.plot(np.arange(1, ref.size + 1), ref, **ref_style)
        ref_wall = g["reference_wall_times"].iloc[0]
        if ref_wall.size == ref.size:
            ax_t.plot(ref_wall, ref, **ref_style)
        else:
            ref_no_wall = True
        name = f"{wl}, {ws} rank{'s' if ws != 1 else ''}" + (f" ({run})" if multi_run else "")
        ax_s.set(title=f"{name}: loss vs step", xlabel="step", ylabel="loss")
        ax_t.set(title=f"{name}: loss vs wall time", xlabel="wall time (s)", ylabel="loss")
        ax_d.set(title="relative deviation from reference", xlabel="step",
                 ylabel="|loss - ref| / ref")
        ax_d.set_ylim(bottom=0)
        lo = min(float(np.min(x)) for x in g["losses"])
        hi = max(float(np.max(x)) for x in g["losses"])
        if lo > 0 and hi / lo > 20:
            ax_s.set_yscale("log")
            ax_t.set_yscale("log")
    shared_legend(fig, axes.ravel(), "backend")
    cap = "Dashed black: the single-process reference on the same global batches"
    cap += (" (no reference_wall_times in the results, so the wall-time panel shows only "
            "the measured backends)." if ref_no_wall else ".")
    cap += " Right: relative deviation per step, with the tolerance (dashed grey)."
    if no_wall:
        cap += " Some runs had no wall times and are missing from the wall-time panel."
    figs.add("loss", "Loss vs step and vs wall time", fig, cap)


def training_figures(tp: pd.DataFrame, cv: pd.DataFrame, figs: Figures, multi_run: bool):
    """tp must already have the scaling columns (compare.add_scaling)."""
    # the theme (and seaborn with it) only where there is something to draw
    with style() if not (tp.empty and cv.empty) else contextlib.nullcontext():
        if tp.empty:
            for n, t in (("throughput", "Throughput vs world size"),
                         ("scaling_efficiency", "Scaling efficiency"),
                         ("step_times", "Step-time distributions")):
                figs.omit(n, t, "no throughput results")
        else:
            throughput_fig(tp, figs, multi_run)
            efficiency_fig(tp, figs, multi_run)
            step_time_fig(tp, figs, multi_run)
        if cv.empty:
            figs.omit("loss", "Loss vs step and vs wall time", "no convergence results")
        else:
            loss_fig(cv, figs, multi_run)

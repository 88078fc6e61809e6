"""Communication and resource figures: collective bus bandwidth vs message size,
exposed communication per backend, utilisation and memory over time per rank.

Same theme and backend colours as hvd_vs_ddp.reports.figures; absent data -> a one-line note.

    from hvd_vs_ddp.reports.figures_comm import comm_figures
    comm_figures(data, exposed_frame, figs, multi_run)   # appends to figs.items/notes
"""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator

from hvd_vs_ddp.reports.figures import (
    Figures,
    facet_grid,
    n_cols,
    series_palette,
    shared_legend,
    slots,
)
from hvd_vs_ddp.reports.tables import OP_ORDER as _OP_ORDER
from hvd_vs_ddp.reports.tables import human_bytes
from hvd_vs_ddp.reports.theme import color, style
from hvd_vs_ddp.run_model.labels import order

MAX_MONITOR_FIGS = 24


def busbw_fig(coll: pd.DataFrame, memcpy: pd.DataFrame, figs: Figures, multi_run: bool):
    keys = sorted(coll.groupby(["run", "op", "world_size"]).groups,
                  key=lambda k: (k[0], _OP_ORDER.get(k[1], 9), k[1], k[2]))
    fig, axes = facet_grid(len(keys), ncols=2, w=5.4, h=3.6)
    for ax, (run, op, ws) in zip(axes, keys):
        g = coll[(coll["run"] == run) & (coll["op"] == op) & (coll["world_size"] == ws)]
        for lab in order(g["label"]):
            d = g[g["label"] == lab].groupby("bytes", as_index=False).agg(
                busbw=("busbw_gbps", "median"), correct=("correct", "all"))
            ax.plot(d["bytes"], d["busbw"], marker="o", ms=4, lw=1.8, color=color(lab), label=lab)
            bad = d[~d["correct"]]
            if not bad.empty:
                ax.scatter(bad["bytes"], bad["busbw"], marker="X", s=70, color="#CC0000",
                           zorder=5, label="wrong result")
        mc = memcpy[memcpy["run"] == run] if not memcpy.empty else memcpy
        for (dev, g_mc), ls in zip(mc.groupby("device") if not mc.empty else [], ("--", ":")):
            ax.axhline(float(g_mc["bandwidth_gbps"].max()), ls=ls, color="#555555", lw=1.2,
                       label=f"memcpy peak, {dev} (limit)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=4))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.tick_params(axis="x", labelrotation=30)
        ax.set(title=f"{op}, {ws} ranks" + (f" ({run})" if multi_run else ""),
               xlabel="message size per rank (bytes)",
               ylabel="busbw (GB/s)" if op != "broadcast" else "busbw = algbw (GB/s)")
    shared_legend(fig, axes, "backend")
    cap = "nccl-tests definitions: allreduce busbw = algbw x 2(n-1)/n; allgather algbw x (n-1)/n."
    if memcpy.empty:
        cap += " No memcpy measurement, so no limit line."
    figs.add("busbw", "Collective bus bandwidth vs message size", fig, cap)


def exposed_fig(ex: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    facets = list(ex.groupby(["run", "case"], sort=True))
    fig, axes = facet_grid(len(facets), ncols=n_cols(ex, 2), w=5.6, h=3.6)
    used: dict[str, str] = {}
    for ax, ((run, case), g) in zip(axes, facets):
        names, pal = series_palette(g)
        slot_order, ticks = slots(g, names)
        g = g.assign(x=[slot_order.index(f"{w}|{s}") for w, s in zip(g["world_size"], g["series"])])
        comp = g["compute_s"].to_numpy() * 1e3
        expo = np.clip(g["exposed_s"].to_numpy() * 1e3, 0, None)
        ax.bar(g["x"], comp, color="#C8C8C8", edgecolor="white", width=0.8)
        ax.bar(g["x"], expo, bottom=comp, color=[pal[s] for s in g["series"]],
               edgecolor="white", width=0.8)
        for xi, c, e, f in zip(g["x"], comp, expo, g["exposed_frac"]):
            ax.text(xi, c + e, f"{max(f, 0) * 100:.0f}%", ha="center", va="bottom", fontsize=8)
        ax.set_xticks([t for t, _ in ticks], [lab for _, lab in ticks])
        ax.set_xlim(-0.7, len(slot_order) - 0.3)
        ax.set(title=f"{case} ({run})" if multi_run else case, ylabel="median step (ms)",
               xlabel="world size")
        ax.set_ylim(0, float((comp + expo).max()) * 1.15)
        used.update({s: pal[s] for s in names})
    handles = [Patch(color="#C8C8C8", label="compute only")] + [
        Patch(color=c, label=f"exposed comm: {s}") for s, c in used.items()]
    fig.legend(handles=handles, loc="outside right upper")
    figs.add("exposed_comm", "Exposed communication per backend", fig,
             "Grey: compute-only median step time; coloured: the rest of the median step "
             "(exposed communication), one bar per backend, grouped by world size; label: its "
             "share of the step.")


def _shades(base: str, n: int) -> list:
    import seaborn as sns  # only where a figure is drawn (theme.style)

    return sns.dark_palette(base, n_colors=n + 1, reverse=True)[:n] if n > 1 else [base]


def monitor_figs(tp: pd.DataFrame, figs: Figures, multi_run: bool) -> None:
    def sampled(mon) -> bool:  # at least one rank with two or more samples
        return isinstance(mon, dict) and any(len(rk.get("t") or []) > 1
                                             for rk in mon.get("ranks") or [])
    rows = [r for _, r in tp.iterrows() if sampled(r["monitor"])]
    if not rows:
        figs.omit("monitor", "Utilisation and memory over time",
                  "no monitor samples in the results")
        return
    if len(rows) > MAX_MONITOR_FIGS:
        figs.notes.append(f"Utilisation and memory: showing the first {MAX_MONITOR_FIGS} of "
                          f"{len(rows)} monitored cells.")
    for r in rows[:MAX_MONITOR_FIGS]:
        ranks = sorted(r["monitor"]["ranks"], key=lambda x: x.get("rank", 0))
        fig = Figure(figsize=(11.5, 2.9), layout="constrained")
        ax_u, ax_m = fig.subplots(1, 2)
        gpu = False
        for shade, rk in zip(_shades(color(r["label"]), len(ranks)), ranks):
            t = np.asarray(rk.get("t") or [], float)
            name = f"rank {rk.get('rank')}"
            for key, ax in (("cpu_percent", ax_u), ("rss_mb", ax_m)):
                y = rk.get(key)
                if y and len(y) == t.size:
                    ax.plot(t, y, color=shade, lw=1.4, label=f"{name} (CPU)")
            for key, ax in (("gpu_util", ax_u), ("gpu_mem_mb", ax_m)):
                y = rk.get(key)
                if y and len(y) == t.size:
                    gpu = True
                    ax.plot(t, y, color=shade, lw=1.4, ls="--", label=f"{name} (GPU)")
        ax_u.set(xlabel="time (s)", title="utilisation",
                 ylabel="% (CPU: 100 = one core)" if not gpu else "% (CPU: 100 = one core; GPU)")
        ax_m.set(xlabel="time (s)", ylabel="MB", title="memory (CPU: RSS; GPU: used)")
        ax_u.set_ylim(bottom=0)
        ax_m.set_ylim(bottom=0)
        shared_legend(fig, [ax_u, ax_m])
        title = (f"{r['case']}: {r['series']}, {r['world_size']} ranks"
                 + (f" ({r['run']})" if multi_run else ""))
        src = "psutil CPU% and RSS" + ("; NVML GPU util and memory (dashed)" if gpu else "")
        fig.suptitle(title, fontsize=10.5, fontweight="bold")
        figs.add(f"monitor_{len([f for f in figs.items if f.group == 'monitor']):02d}", title, fig,
                 f"{src}; one shade of the backend colour per rank (cell {r['cell_id']}).",
                 group="monitor")


def comm_figures(coll, memcpy, ex, tp, figs: Figures, multi_run: bool) -> None:
    # the theme (and seaborn with it) only where there is something to draw
    with style() if not (coll.empty and ex.empty and tp.empty) else contextlib.nullcontext():
        if coll.empty:
            figs.omit("busbw", "Collective bus bandwidth", "no collective results")
        else:
            busbw_fig(coll, memcpy, figs, multi_run)
        if ex.empty:
            figs.omit("exposed_comm", "Exposed communication", "no compute-only results matching a "
                      "throughput cell (same workload, per-rank batch and knobs)")
        else:
            exposed_fig(ex, figs, multi_run)
        if tp.empty:
            figs.omit("monitor", "Utilisation and memory over time", "no throughput results")
        else:
            monitor_figs(tp, figs, multi_run)

"""The report's "Failure and recovery" section: what a killed worker cost each library.

Reads the `recovery` frame (one row per trial: hvd_vs_ddp/results_schema/kinds/recovery.py)
and gives (1) a table per run, elastic path, checkpoint pattern and world size: trials,
seconds from the kill to the next completed step, steps lost, world size after,
completed, hangs and leftover processes, final loss and weights against the
uninterrupted reference, commit/save/restore times and the steady-state cost of
committing; (2) the verdicts between the libraries at each world size: Horovod Elastic
against each torch-side series (torchrun with each checkpoint pattern, torchft) on time
to recover (a ratio of medians with
the two-level bootstrap interval over repetitions, hvd_vs_ddp/run_model/stats.py, and the
margin's words, hvd_vs_ddp/run_model/verdicts.py; in a run with a budget, the sequential
interval at the pair's look) and on steps lost; (3) one timeline figure
per library (completed step against seconds since the kill, every trial, the kill and
each recovery marked); (4) the same verdicts and rows for verdicts.json ("recovery").

    from hvd_vs_ddp.reports.recovery_section import recovery_section
    section, heads, doc = recovery_section(data, figs, margin)   # section None: no trials
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from hvd_vs_ddp.reports.figures import Figures
from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.tables import DASH, Table
from hvd_vs_ddp.reports.theme import color, style
from hvd_vs_ddp.run_model.frames import Data
from hvd_vs_ddp.run_model.recovery_pairs import frame, median, plans_of, verdicts

TITLE = "Failure and recovery"
FIGURE = "recovery_timeline"
KEY = ["run", "path", "checkpoint", "world_size", "series"]


def _med(values, fmt: str = "{:.2f}", scale: float = 1.0) -> str:
    vals = [v * scale for v in values if v is not None and not pd.isna(v)]
    if not vals:
        return ""
    lo, hi, mid = min(vals), max(vals), float(np.median(vals))
    return fmt.format(mid) + ("" if lo == hi else f" [{fmt.format(lo)}–{fmt.format(hi)}]")


def _worst(values) -> str:
    vals = [v for v in values if v is not None and not pd.isna(v)]
    return f"{max(vals):.1e}" if vals else "n/a"


def _pct(v) -> str:
    return "" if v is None or pd.isna(v) else f"{v * 100:+.0f}%"


def table(df: pd.DataFrame) -> Table:
    rows = []
    for key, g in df.groupby(KEY, sort=False):
        run, _path, _ckpt, world, series = key
        after = sorted({int(w) for w in g["world_after"].dropna()})
        rows.append({
            "run": run, "elastic path": series, "world size": int(world),
            "trials": len(g), "k": int(g["commit_every"].iloc[0]),
            "kill after step": _med(g["killed_after_step"], "{:.0f}"),
            "kill -> next step (s)": _med(g["recovery_s"]),
            "rendezvous (s)": _med(g["rendezvous_s"]),
            "steps lost": _med(g["steps_lost"], "{:.0f}"),
            "world after": ",".join(map(str, after)) or "n/a",
            "completed (hangs, leftovers)": f"{int(g['completed'].sum())}/{len(g)} "
                                            f"({int(g['hang'].sum())}, "
                                            f"{int(g['leftovers'].sum())})",
            "loss / weights diff (worst)": f"{_worst(g['final_loss_rel_diff'])} / "
                                           f"{_worst(g['weights_rel_diff'])}",
            "commit / save / restore (ms)": " / ".join(
                _med(v, "{:.1f}", 1e3) or DASH for v in (
                    g["commit_median_s"], [float(np.median(s)) for s in g["save_s"] if len(s)],
                    g["restore_s"])),
            "commit cost vs none": _pct(median(g["commit_overhead"])),
            "commit share": _pct(median(g["commit_share"]))})
    out = pd.DataFrame(rows)
    if not out.empty and out["run"].nunique() == 1:
        out = out.drop(columns="run")
    tol = float(df["tolerance"].iloc[0])
    return Table("Failure and recovery: one worker SIGKILLed mid-training", out,
                 "Each trial launches the elastic job of one plan (same workload, seed, global "
                 "batch, steps; a commit or checkpoint every k steps), SIGKILLs a worker on the "
                 "second host once it completed the kill step, and reads every figure from "
                 "the workers' event logs. Seconds: median over trials [range]. Steps lost: "
                 "completed steps redone after the rollback or restart. World after: ranks "
                 "that finished (Horovod Elastic blacklists the failed host; torchrun "
                 "restarts the whole group; torchft goes on without the dead replica and "
                 "takes it back once restarted and healed from a live peer). Loss and "
                 "weights: largest relative difference from the uninterrupted run of the "
                 "plan (0 where it was replayed exactly at "
                 f"2 ranks; tolerance {tol:g}). Commit: the slowest rank's commit (Horovod: "
                 "in-memory save + host check; torchrun: torch.save on rank 0 or "
                 "torch.distributed.checkpoint); save: rank 0's save; restore: the slowest "
                 "rank's. Commit cost vs none: mean step interval with commits against the "
                 "same path's run without (after 5 warm-up steps; noisy on a shared machine); "
                 "commit share: median commit / (k x median step).")


def _lines(pairs: list[dict[str, Any]]) -> list[str]:
    out = []
    for p in pairs:
        parts = [x["text"] for x in (p["time_to_recover"], p["steps_lost"]) if x]
        out.append(f"{p['world_size']} ranks, {p['a']} vs {p['b']}: " + "; ".join(parts))
    return out


def _broken(pts: np.ndarray) -> np.ndarray:
    """The points with a gap (NaN row) wherever training stopped: the step did not go up
    by one, or the pause was 5x the trial's median step interval or more."""
    if len(pts) < 3:
        return pts
    dt, ds = np.diff(pts[:, 0]), np.diff(pts[:, 1])
    cut = (ds != 1) | (dt > 5 * np.median(dt))
    out = []
    for i, p in enumerate(pts):
        out.append(p)
        if i < len(cut) and cut[i]:
            out.append([np.nan, np.nan, np.nan])
    return np.asarray(out)


def figure(df: pd.DataFrame, figs: Figures) -> None:
    """Completed step against seconds since the kill, one panel per series and world size,
    every panel on the same time axis."""
    panels = list(df.groupby(["world_size", "series"], sort=True))
    if not panels:
        return
    with style():
        ncols = min(3, len(panels))
        nrows = -(-len(panels) // ncols)
        fig = Figure(figsize=(4.6 * ncols + 0.6, 3.3 * nrows + 0.4), layout="constrained")
        # one time axis for every panel: the eye compares the recoveries, not the axes
        axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True).ravel()
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        for ax in axes:  # every visible panel keeps its tick labels (sharex hides inner ones)
            ax.tick_params(labelbottom=True)
        for ax, ((world, series), g) in zip(axes, panels):
            hue = color(str(g["backend"].iloc[0]))  # the backend's, as in every figure
            for _, r in g.iterrows():
                pts = np.asarray(r["timeline"], dtype=float)
                if pts.size == 0 or r["kill_t"] is None or pd.isna(r["kill_t"]):
                    continue
                pts = _broken(pts)
                ax.plot(pts[:, 0] - r["kill_t"], pts[:, 1], ".-", ms=2, lw=0.6, color=hue,
                        alpha=0.6)
                if r["recovered_t"] is not None and not pd.isna(r["recovered_t"]):
                    ax.axvline(r["recovered_t"] - r["kill_t"], color="#009E73", lw=1,
                               alpha=0.7)
            ax.axvline(0, color="#CC0000", ls="--", lw=1.2)
            ax.set_title(f"{series}, {int(world)} ranks", fontsize=9)
            ax.set_xlabel("seconds since the kill (red); recovered: green")
            ax.set_ylabel("completed step (rank 0)")
        figs.add(FIGURE, "Recovery timelines", fig,
                 "Every trial's completed steps (rank 0) against seconds since its worker was "
                 "SIGKILLed (red dashed line); green lines: the first step completed after "
                 "recovery. A drop in the step number is the rollback to the last commit or "
                 "checkpoint; the gap is the time without training.")


def recovery_section(data: Data, figs: Figures, margin: float
                     ) -> tuple[Section | None, list[str], dict[str, Any]]:
    """(the section or None, headline sentences, the verdicts.json part)."""
    df = frame(data)
    if df.empty:
        return None, [], {"pairs": [], "trials": []}
    pairs = verdicts(df, margin, plans_of(data))
    figure(df, figs)
    blocks: list = [table(df)]
    fig = figs.get(FIGURE)
    blocks += [fig] if fig is not None else []
    lines = _lines(pairs)
    blocks.append(Notes(lines or ["No world size has trials of both libraries: no verdict."]))
    rows = [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()
             if k in ("run", "path", "library", "checkpoint", "world_size", "rep",
                      "completed", "hang", "leftovers", "world_before", "world_after",
                      "killed_after_step", "resume_step", "steps_lost", "recovery_s",
                      "rendezvous_s", "restore_s", "final_loss_rel_diff", "weights_rel_diff",
                      "commit_median_s", "commit_overhead", "commit_share", "kill_step")}
            for r in df.to_dict("records")]
    heads = [f"Recovery from a killed worker, {line}" for line in lines]
    return Section(TITLE, blocks), heads, {"pairs": pairs, "trials": _jsonable(rows)}


def _jsonable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def fix(v):
        if isinstance(v, (np.integer,)):
            return int(v)
        if isinstance(v, (np.floating, float)):
            return None if not np.isfinite(v) else float(v)
        if isinstance(v, np.bool_):
            return bool(v)
        return v
    return [{k: fix(v) for k, v in r.items()} for r in rows]

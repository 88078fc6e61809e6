"""The report's "Across a link" section: each library's step against the link's rate.

For runs with cells across emulated hosts (`run --emulate-hosts 2 --link-rate`, the
`links` preset; docs/links.md), per run, workload and library series, one row per link
(the rates in ascending order, loopback last: no wire):

- the median step time (all timed steps of all repetitions), the compute-only step of
  the same per-rank batch on one host (as many processes at once as ranks: the
  compute-only cell, which does not depend on the link) and the exposed share
  1 - compute / step (compare.exposed_comm);
- the bytes each rank's host sent on the link per timed step (the mean over ranks of
  its interface's counter over the timed rounds), the model's gradient bytes, what a ring
  allreduce of them sends (2(n-1)/n of them), wire / ring, and the seconds that ring's
  bytes take at the link's rate (hvd_vs_ddp/links/rates.py `transfer_seconds`): how
  much of the step the link alone implies;

and, per rate, which library is faster: the Horovod/DDP pairs of the run model
(hvd_vs_ddp/run_model/pairs.py) at each link with their interval and verdict, and where
the faster library changes between two adjacent rates (the curves cross there).

    from hvd_vs_ddp.reports.links_section import links_section
    section = links_section(data, cmp, exposed, margin)     # a render.Section, or None
    python -m hvd_vs_ddp.reports.links_section RUN_DIR      # prints the tables
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from hvd_vs_ddp.reports.figures import Figures
from hvd_vs_ddp.reports.render import Notes, Section
from hvd_vs_ddp.reports.tables import Table, ms, r3
from hvd_vs_ddp.reports.theme import color, style
from hvd_vs_ddp.run_model.frames import Data

TITLE = "Across a link"
LOOPBACK = "loopback"
UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def bits_per_s(link: str) -> float:
    """A link's rate in bits/s ('500mbit' -> 5e8); loopback: infinite (no wire)."""
    for unit, scale in UNITS.items():
        if link.endswith(unit):
            try:
                return float(link[:-len(unit)]) * scale
            except ValueError:
                break
    return float("inf")


def base_case(case: str, link: str) -> str:
    return case.replace(f" [link {link}]", "")


def _mb(v) -> str:
    return "" if v is None or pd.isna(v) else f"{v / 1e6:.2f}"


def link_rows(data: Data, exposed: pd.DataFrame) -> pd.DataFrame:
    """One row per throughput cell of a run that has cells across a link (see the module
    docstring); empty when no run has one."""
    tp = data.throughput
    if tp.empty or "link" not in tp or not (tp["link"].fillna(LOOPBACK) != LOOPBACK).any():
        return pd.DataFrame()
    linked_runs = set(tp.loc[tp["link"].fillna(LOOPBACK) != LOOPBACK, "run"])
    tp = tp[tp["run"].isin(linked_runs) & (tp["world_size"] > 1)]
    ex = exposed.set_index(["run", "case", "series", "world_size"]) if not exposed.empty \
        else None
    rows = []
    for _, r in tp.iterrows():
        link = r["link"] if isinstance(r["link"], str) else LOOPBACK
        key = (r["run"], r["case"], r["series"], r["world_size"])
        compute = ex.loc[key, "compute_s"] if ex is not None and key in ex.index else np.nan
        if isinstance(compute, pd.Series):
            compute = compute.iloc[0]
        wire = r.get("wire") if isinstance(r.get("wire"), dict) else {}
        per_step = wire.get("tx_bytes_per_step")
        ring = wire.get("ring_bytes")
        rate = bits_per_s(link)
        rows.append({
            "run": r["run"], "workload": base_case(r["case"], link),
            "series": r["series"], "library": r["library"], "link": link, "rate_bps": rate,
            "world_size": int(r["world_size"]), "reps": r.get("n_reps"),
            "step_s": r["step_median"], "compute_s": compute,
            "exposed": (1 - compute / r["step_median"]) if not pd.isna(compute) else np.nan,
            "wire_bytes": per_step, "grad_bytes": wire.get("grad_bytes"),
            "ring_bytes": ring,
            "wire_over_ring": wire.get("wire_over_ring"),
            "ring_wire_s": (ring * 8 / rate) if ring and np.isfinite(rate) else np.nan})
    out = pd.DataFrame(rows)
    return out.sort_values(["run", "workload", "series", "rate_bps"]).reset_index(drop=True)


def step_table(rows: pd.DataFrame, multi: bool) -> Table:
    shown = [{**({"run": r["run"]} if multi else {}), "workload": r["workload"],
              "library": r["series"], "link": r["link"], "reps": r["reps"],
              "step (ms)": ms(r["step_s"]), "compute-only (ms)": ms(r["compute_s"]),
              "exposed": "" if pd.isna(r["exposed"]) else f"{r['exposed']:.0%}",
              "wire MB/step": _mb(r["wire_bytes"]), "ring MB": _mb(r["ring_bytes"]),
              "wire/ring": r3(r["wire_over_ring"]) if r["wire_over_ring"] is not None else "",
              "ring at rate (ms)": ms(r["ring_wire_s"])}
             for _, r in rows.iterrows()]
    return Table("Step time and bytes on the wire against the link's rate",
                 pd.DataFrame(shown),
                 "step: the median timed step (the slowest rank's, all repetitions); "
                 "compute-only: the same per-rank step with no communication, as many "
                 "processes at once on one host (it does not depend on the link); exposed: "
                 "1 - compute-only / step. wire MB/step: what each rank's host sent on the "
                 "link per timed step (its interface's counter over the timed rounds, the "
                 "mean over ranks: Ethernet, IP and TCP headers and the acknowledgements of "
                 "what it received included, 0.2-5% over the payload: docs/links.md); ring "
                 "MB: the "
                 "model's gradient bytes x 2(n-1)/n, what each rank sends in a ring "
                 "allreduce; ring at rate: the time those bytes take at the link's nominal "
                 "rate (the veth reaches about 0.95 of it: docs/links.md). loopback: one "
                 "host, no wire.")


def pairs_by_rate(cmp: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The Horovod/DDP pairs of the linked runs, with their link and base workload."""
    if cmp.empty or rows.empty:
        return pd.DataFrame()
    c = cmp[cmp["run"].isin(set(rows["run"]))].copy()
    if c.empty:
        return c
    links = []
    for case in c["case"]:
        found = [k for k in set(rows["link"]) if k != LOOPBACK and case.endswith(f" [link {k}]")]
        links.append(found[0] if found else LOOPBACK)
    c["link"] = links
    c["rate_bps"] = [bits_per_s(k) for k in links]
    c["workload"] = [base_case(case, k) for case, k in zip(c["case"], links)]
    return c.sort_values(["run", "workload", "horovod", "ddp", "rate_bps"])


def pair_table(pairs: pd.DataFrame, multi: bool) -> Table:
    dash = "\u2013"
    shown = [{**({"run": r["run"]} if multi else {}), "workload": r["workload"],
              "link": r["link"], "horovod": r["horovod"], "ddp": r["ddp"],
              "hvd/ddp [95%]": f"{r3(r['ratio'])} [{r3(r['lo'])}{dash}{r3(r['hi'])}]",
              "reps": r["reps"],
              "verdict": f"faster: {r['faster']}" if r["faster"] else r["verdict"]}
             for _, r in pairs.iterrows()]
    return Table("Which library is faster at each rate", pd.DataFrame(shown),
                 "hvd/ddp: the ratio of median samples/s, above 1 when Horovod is faster, "
                 "its 95% two-level interval and verdict as in the comparison's table.")


def crossings(pairs: pd.DataFrame) -> list[str]:
    """Where the faster library changes between two adjacent rates (firm verdicts only)."""
    out = []
    for (_run, wl, h, d), g in pairs.groupby(["run", "workload", "horovod", "ddp"],
                                             sort=False):
        firm = [(r["link"], r["faster"]) for _, r in g.iterrows() if r["faster"]]
        said = []
        for (la, fa), (lb, fb) in zip(firm, firm[1:]):
            if fa != fb:
                said.append(f"{fa} at {la}, {fb} at {lb}")
        sentence = f"{wl}, {h} against {d}: "
        if said:
            out.append(sentence + "the curves cross: " + "; ".join(said) + ".")
        elif firm:
            winners = sorted({f for _, f in firm})
            out.append(sentence + f"{' and '.join(winners)} faster wherever the verdict is "
                       f"firm ({', '.join(k for k, _ in firm)}); no crossing measured.")
        else:
            out.append(sentence + "no firm verdict at any rate.")
    return out


def step_figure(rows: pd.DataFrame, figs: Figures) -> None:
    """Per workload: each library's median step against the link's rate (loopback drawn
    at the right, past the fastest rate), the compute-only step, and compute-only plus
    the time the ring's bytes take at each rate (the step if nothing overlapped)."""
    panels = list(rows.groupby(["run", "workload"], sort=True))
    if not panels:
        return
    multi = rows["run"].nunique() > 1
    with style():
        fig = Figure(figsize=(5.2 * len(panels) + 0.8, 3.8), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False).ravel()
        for ax, ((run, workload), g) in zip(axes, panels):
            links = sorted(set(g["link"]), key=bits_per_s)
            x = {k: i for i, k in enumerate(links)}
            for series, s in g.groupby("series", sort=True):
                s = s.sort_values("rate_bps")
                ax.plot([x[k] for k in s["link"]], s["step_s"] * 1e3, marker="o",
                        color=color(s["series"].iloc[0]), label=series)
            compute = g["compute_s"].dropna()
            if not compute.empty:
                c = float(compute.median())
                ax.axhline(c * 1e3, color="grey", ls="--", lw=1, label="compute-only")
                wire = g.dropna(subset=["ring_wire_s"]).drop_duplicates("link")
                if not wire.empty:
                    ax.plot([x[k] for k in wire["link"]], (c + wire["ring_wire_s"]) * 1e3,
                            color="black", ls=":", lw=1.2,
                            label="compute-only + ring at rate")
            ax.set_xticks(range(len(links)), links)
            ax.set_xlabel("link")
            ax.set_ylabel("median step (ms)")
            ax.set_title(f"{'[' + run + '] ' if multi else ''}{workload}, 2 ranks",
                         fontsize=10)
            ax.set_ylim(bottom=0)
        axes[-1].legend(fontsize=8, loc="best")
        figs.add("links_steps", "Step time against the link's rate", fig,
                 "Each library's median step per link, slowest rate at the left, loopback "
                 "(one host, no wire) at the right; dashed: the compute-only step; dotted: "
                 "compute-only plus the ring allreduce's bytes at the link's nominal rate, "
                 "the step if nothing overlapped the wire.")


def links_section(data: Data, cmp: pd.DataFrame, exposed: pd.DataFrame,
                  margin: float, figs: Figures | None = None) -> Section | None:
    rows = link_rows(data, exposed)
    if rows.empty:
        return None
    multi = rows["run"].nunique() > 1
    blocks: list = [
        "Cells across two emulated hosts (one rank each, network namespaces of this "
        "machine) joined by a link shaped to each rate in both directions; only the rate "
        "is emulated, no delay (docs/links.md). Both hosts share this machine's cores, so "
        "the link's TCP work competes with training as it would not on two machines.",
        step_table(rows, multi)]
    if figs is not None:
        step_figure(rows, figs)
        fig = figs.get("links_steps")
        blocks += [fig] if fig is not None else []
    pairs = pairs_by_rate(cmp, rows)
    if not pairs.empty:
        blocks += [pair_table(pairs, multi), Notes(crossings(pairs))]
    return Section(TITLE, blocks)


if __name__ == "__main__":
    from pathlib import Path

    from hvd_vs_ddp.reports.compare import exposed_comm
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames
    from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp

    d = build_frames([load_judged_run(Path(p)) for p in sys.argv[1:]])
    rows_ = link_rows(d, exposed_comm(d))
    print(rows_.drop(columns=["rate_bps"]).to_string())
    p_ = pairs_by_rate(hvd_vs_ddp(d.throughput), rows_)
    if not p_.empty:
        print(p_[["workload", "link", "horovod", "ddp", "ratio", "lo", "hi", "verdict"]]
              .to_string())
        print("\n".join(crossings(p_)))

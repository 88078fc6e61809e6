"""The budget of `run --budget` (hvd_vs_ddp/cli/budget.py) as the reader needs it: one
short line in the answer box (time used, pairs firm, open, given up) and a section of its
own with every pair's verdict and the repetitions it took, where the whole line of
budget_lines (the same facts, one paragraph) used to sit in the answer box.

    from hvd_vs_ddp.reports.budget_section import short_lines, section
    short_lines(runs)   # ["Budget (run): 4 min, 0.0 min used; 4 of 6 pairs firm, ..."]
    section(runs)       # render.Section "Budget" or None (no run had a budget)
"""
from __future__ import annotations

import pandas as pd

from hvd_vs_ddp.reports.budget_text import budgeted
from hvd_vs_ddp.reports.render import Section
from hvd_vs_ddp.reports.tables import Table

TITLE = "Budget"


def short_lines(runs) -> list[str]:
    """One line per run with a budget, in budget_lines' order."""
    out = []
    for run, plan in budgeted(runs):
        pairs = plan["pairs"]
        firm = sum(1 for p in pairs if not p.get("open"))
        given = len(plan.get("given_up") or [])
        left = len(pairs) - firm
        out.append(f"Budget ({run.name}): {plan.get('minutes', 0):g} min, "
                   f"{(plan.get('spent_s') or 0) / 60:.1f} min used; {firm} of {len(pairs)} "
                   f"pairs firm" + (f", {left} left open" if left else "")
                   + (f" ({given} given up at once, unable to settle)" if given else "")
                   + f"; each pair in section {TITLE}.")
    return out


def section(runs) -> Section | None:
    plans = budgeted(runs)
    if not plans:
        return None
    blocks: list = []
    for run, plan in plans:
        chance = {g["pair"]: g.get("chance") for g in plan.get("given_up") or []}
        rows = [{"pair": p["pair"], "verdict": p.get("verdict", ""),
                 "repetitions": p.get("repetitions", ""),
                 "state": ("given up" + (f" ({chance[p['pair']]:.0%} chance by its cap)"
                                         if chance.get(p["pair"]) is not None else "")
                           if p["pair"] in chance else "open" if p.get("open") else "firm")}
                for p in plan["pairs"]]
        stopped = plan.get("stopped") or ""
        blocks.append(Table(
            f"Pairs of {run.name}: {plan.get('minutes', 0):g} min budget, "
            f"{(plan.get('spent_s') or 0) / 60:.1f} min used", pd.DataFrame(rows),
            (f"Stopped: {stopped}. " if stopped else "")
            + "Each pair got repetitions until its verdict was firm, its cap was reached or "
            "the time was spent; a pair given up at once had a negligible chance to settle by "
            "its cap. Intervals: sequential, the error spent over looks "
            "(docs/methodology.md)."))
    return Section(TITLE, blocks)

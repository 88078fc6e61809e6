"""What `run --budget` did, in one paragraph per run: time used, pairs firm, the
repetitions each verdict took, the pairs left open and those given up at once. Text only
(no table, no figure), so the answer's headlines (hvd_vs_ddp/reports/compare.py) and the
Budget section (hvd_vs_ddp/reports/budget_section.py) both take it without importing
each other.

    from hvd_vs_ddp.reports.budget_text import budget_lines
    budget_lines([load_judged_run(p)])   # ["Budget (run): 4 min, 3.9 min used; 7 of 8 ..."]
"""
from __future__ import annotations

from typing import Any


def budgeted(runs) -> list[tuple[Any, dict[str, Any]]]:
    """(run, plan) for each run with a budget (manifest.budget with pairs), in order."""
    out = []
    for run in runs:
        plan = getattr(run.manifest, "budget", None)
        if isinstance(plan, dict) and plan.get("pairs"):
            out.append((run, plan))
    return out


def budget_lines(runs) -> list[str]:
    """One line per run with a budget (manifest.budget, hvd_vs_ddp/cli/budget.py): time
    used, firm pairs, the repetitions each verdict took, the pairs left open and those
    given up at once (their chance to settle by their cap negligible)."""
    out = []
    for run, plan in budgeted(runs):
        pairs = plan["pairs"]
        firm = [p for p in pairs if not p.get("open")]
        took = "; ".join(f"{p['pair']}: {p['verdict']} after {p['repetitions']}"
                         for p in pairs)
        left = [p["pair"] for p in pairs if p.get("open")]
        given = [f"{g['pair']} ({g['chance']:.0%} chance by its cap)"
                 for g in plan.get("given_up") or []]
        out.append(f"Budget ({run.name}): {plan.get('minutes', 0):g} min, "
                   f"{(plan.get('spent_s') or 0) / 60:.1f} min used; {len(firm)} of "
                   f"{len(pairs)} pairs firm, repetitions per verdict: {took}. "
                   + (f"Left open ({plan.get('stopped') or 'run stopped'}): "
                      f"{', '.join(left)}." if left else "No pair left open.")
                   + (f" Given up at once, unable to settle: {', '.join(given)}."
                      if given else "")
                   + " Intervals: sequential, the error spent over looks "
                   "(docs/methodology.md).")
    return out

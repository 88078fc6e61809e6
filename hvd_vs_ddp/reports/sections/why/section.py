"""The report's "Where the step goes" section: the tables of steps.py (this package), its
figure (figure.py) and the closing notes on disagreements.

    from hvd_vs_ddp.reports.sections.why.section import why_section
    section = why_section(data, figs, multi_run)     # a render.Section
"""
from __future__ import annotations

import pandas as pd

from hvd_vs_ddp.reports.figures import Figures
from hvd_vs_ddp.reports.render import Block, Notes, Section
from hvd_vs_ddp.reports.sections.why.figure import NAME, why_figure
from hvd_vs_ddp.reports.sections.why.profiler import KEYS, agreement, profiler_frame
from hvd_vs_ddp.reports.sections.why.steps import Why, where_step_goes
from hvd_vs_ddp.reports.tables import Table, human_bytes, ms
from hvd_vs_ddp.run_model.frames import Data

TITLE = "Where the step goes"


def _frame(rows: list[dict]) -> pd.DataFrame:
    """The table's rows; the run column only when the report covers several runs."""
    df = pd.DataFrame(rows)
    return df.drop(columns="run") if not df.empty and df["run"].nunique() == 1 else df


def _ms_range(r: pd.Series) -> str:
    if pd.isna(r.get("sub_lo")):
        return ""
    return f"{ms(r['sub_exposed_s'])} [{ms(r['sub_lo'])}, {ms(r['sub_hi'])}]"


def _short(text) -> str:
    if not isinstance(text, str) or text in ("", "agrees"):
        return text if isinstance(text, str) else ""
    return "disagrees: " + text[text.index("(") + 1:text.index(")")]


def steps_table(w: Why) -> Table:
    rows = []
    for _, r in w.steps.iterrows():
        own = r.get("source")
        extra = ""
        if own == "DDP's own statistics":
            extra = f"forward {ms(r['forward_s'])}, backward {ms(r['backward_s'])}"
        elif own == "Horovod's timeline":
            extra = (f"allreduce {ms(r['allreduce_s'])}, memcpy {ms(r['memcpy_s'])}, "
                     f"negotiation (last tensor) {ms(r['negotiate_s'])}, queue "
                     f"{ms(r['queue_s'])}; instrumented step {ms(r['instrumented_step_s'])}")
        rows.append({
            "run": r["run"], "case": r["case"], "backend": r["series"],
            "world size": r["world_size"], "median step (ms)": ms(r["step_s"]),
            "compute only (ms)": ms(r.get("compute_s")),
            "exposed comm, subtraction (ms) [95%]": _ms_range(r),
            "own figures from": own if isinstance(own, str) else "",
            "comm (ms)": ms(r.get("own_comm_s")), "hidden under backward (ms)":
                ms(r.get("own_hidden_s")), "exposed (ms)": ms(r.get("own_exposed_s")),
            "details (ms)": extra, "agreement": _short(r.get("disagreement"))})
    df = _frame(rows)
    return Table("Where the step goes: subtraction vs each library's own figures", df,
                 "Subtraction: median step - median compute-only step, 95% two-level "
                 "bootstrap interval. DDP: medians over the timed steps of its own "
                 "statistics, each step read on the rank that finished backward last (the "
                 "step waits for it); exposed = backward comm - its overlap with backward "
                 "compute. Horovod: medians over the steps of the instrumented timeline run "
                 "(comm = the background thread's operations; exposed = from the last rank's "
                 "last gradient to the end of the last allreduce; hidden = comm - exposed; "
                 "negotiation of the last tensor = how long the first rank waited for the "
                 "last). Agreement: whether the library's exposed figure lies inside the "
                 "subtraction's interval; the notes below say why where it does not.")


def stragglers_table(w: Why) -> Table:
    rows = [{"run": r["run"], "case": r["case"], "backend": r["series"],
             "world size": r["world_size"], "rank": str(r["rank"]),
             "waited for the last rank, median (ms)": ms(r["wait_s"]),
             "max (ms)": ms(r["wait_max_s"]), "steps": r["steps"], "source": r["source"]}
            for _, r in w.stragglers.iterrows()]
    df = _frame(rows)
    return Table("Stragglers at the gradient exchange, per rank", df,
                 "How long each rank waited, per step, for the last rank to arrive (0 for "
                 "the last one itself).")


def layout_table(w: Why) -> Table:
    rows = [{"case": r["case"], "backend": r["series"], "world size": r["world_size"],
             "mechanism": r["mechanism"],
             "limit": human_bytes(r["limit"]) if pd.notna(r["limit"]) and r["limit"] else "",
             "groups reduced per step": f"{r['groups_per_step']:g}",
             "tensors per group": f"{r['tensors_per_group']:.1f}",
             "largest group": human_bytes(r["largest_group_bytes"]), "detail": r["detail"]}
            for _, r in w.layout.iterrows()]
    return Table("DDP buckets next to Horovod tensor fusion", pd.DataFrame(rows),
                 "DDP: bucket_cap_mb and the buckets it built (sizes after its rebuild on the "
                 "first step). Horovod: HOROVOD_FUSION_THRESHOLD, responses (fused "
                 "allreduces) per step from the timeline, and how full the largest ran.")


def profiler_table(w: Why, prof: pd.DataFrame) -> Table:
    """The same ruler for both: torch.profiler's account beside the subtraction."""
    sub = w.steps[[*KEYS, "sub_lo", "sub_hi", "sub_exposed_s"]] \
        if "sub_lo" in w.steps else pd.DataFrame(columns=[*KEYS, "sub_lo", "sub_hi"])
    merged = prof.merge(sub, on=list(KEYS), how="left")
    rows = [{"run": r["run"], "case": r["case"], "backend": r["series"],
             "world size": r["world_size"], "profiled step (ms)": ms(r["prof_wall_s"]),
             "computation (ms)": ms(r["prof_compute_s"]),
             "communication (ms)": ms(r["prof_comm_s"]),
             "overlap (ms)": ms(r["prof_overlap_s"]),
             "exposed comm (ms)": ms(r["prof_exposed_comm_s"]),
             "idle (ms)": ms(r["prof_idle_s"]),
             "exposed comm, subtraction (ms) [95%]": _ms_range(r),
             "agreement": agreement(r), "steps": r["prof_steps"]}
            for _, r in merged.iterrows()]
    df = _frame(rows)
    return Table("The same ruler for both: torch.profiler", df,
                 "From `run --profile`: a few steps after the timed rounds under "
                 "torch.profiler, each read on the rank that computed longest; medians over "
                 "the profiled steps. Computation: the training thread's operators (GPU "
                 "kernels where present); communication: the collectives' own intervals on "
                 "any thread (Gloo's workers, c10d, NCCL), and for Horovod, whose background "
                 "thread the profiler cannot see, the training thread's wait in "
                 "synchronize() - its exposed part only; overlap: both at once; idle: "
                 "neither (Python, hooks, waits outside an operator). The profiler slows "
                 "the steps it watches: compare the parts, not the step with the timed one.")


def closing_notes(w: Why) -> list[str]:
    out = list(w.notes)
    steps = w.steps
    if steps.empty or "disagreement" not in steps:
        return out
    bad = steps[steps["disagreement"].fillna("").str.len() > 0]
    bad = bad[bad["disagreement"] != "agrees"]
    for _, r in bad.iterrows():
        out.append(f"{r['case']}, {r['series']} at {r['world_size']} ranks: "
                   f"{r['disagreement']}.")
    if not bad.empty:
        out.append("Why the two rulers differ: the subtraction charges to communication "
                   "everything that makes the distributed step slower than the same step "
                   "alone, including computation slowed by the collective's threads sharing "
                   "the cores; a library's own timer counts only the interval it "
                   "instruments. Neither is wrong; the gap between them is that contention "
                   "and the work outside the timers.")
    return out


def why_section(data: Data, figs: Figures, multi_run: bool) -> Section | None:
    w = where_step_goes(data)
    if w.empty:
        return None
    prof, prof_notes = profiler_frame(data)
    w.notes += prof_notes
    why_figure(w.steps, figs, multi_run)
    blocks: list[Block] = [steps_table(w)]
    f = figs.get(NAME)
    if f is not None:
        blocks.append(f)
    if not prof.empty:
        blocks.append(profiler_table(w, prof))
    if not w.stragglers.empty:
        blocks.append(stragglers_table(w))
    if not w.layout.empty:
        blocks.append(layout_table(w))
    notes = closing_notes(w)
    if notes:
        blocks.append(Notes(notes))
    return Section(TITLE, blocks)

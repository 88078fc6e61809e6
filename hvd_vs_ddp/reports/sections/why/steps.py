"""Why one is faster: where the step goes, by subtraction and by each library's own account.

Three views of the same step, per case, world size and backend:
- the subtraction (hvd_vs_ddp.reports.compare.exposed_comm): exposed communication = median step
  - median compute-only step, here with a 95% interval from the same two-level
  bootstrap as the verdicts (hvd_vs_ddp.run_model.stats: repetitions, then steps; each median
  resampled on its own);
- DDP's own statistics (ddp_stats in the throughput results, hvd_vs_ddp/harness/ddp_stats.py): per
  step, on the rank that finished backward last (the step waits for it), forward and
  backward compute, backward communication, its overlap with backward compute; exposed
  = communication - overlap (the part after backward ends);
- Horovod's own timeline (horovod_timeline results + the trace file,
  hvd_vs_ddp/reports/horovod_timeline.py): per step the background thread's allreduce, copies into
  and out of the fusion buffer, negotiation (for the last tensor: how long the first
  rank waited for the last) and queueing, and exposed communication: from the last
  rank's last gradient (all ranks ready) to the end of the last response. Those
  steps ran in an instrumented job (Horovod's timeline writer busy-polls a core), so
  their seconds are inflated; the table says by how much.
A library's own exposed figure outside the subtraction's interval is a disagreement,
stated with its likely cause (`disagreement`). Stragglers: how long each rank waited
for the last one at the gradient exchange (DDP: end of backward compute on the host's
wall clock; Horovod: the ranks' ready reports, on uncached negotiations only).

    from hvd_vs_ddp.reports.sections.why.steps import where_step_goes
    why = where_step_goes(data)      # Why(steps, stragglers, layout, notes)
    python -m hvd_vs_ddp.reports.sections.why.steps RUN_DIR    # prints the three tables
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.common.run_folder import RunFolder
from hvd_vs_ddp.reports.horovod_timeline import TimelineError, parse, per_step, read_events
from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.disturbed import load_judged_run
from hvd_vs_ddp.run_model.frames import POOL_KEY, Data, build_frames
from hvd_vs_ddp.run_model.labels import order
from hvd_vs_ddp.run_model.load import Run

MATCH = ["run", "label", "world_size", "workload", "workload_params", "per_rank_batch",
         "knob_set", "knobs"]


@dataclass
class Why:
    steps: pd.DataFrame        # one row per (run, case, world size, series)
    stragglers: pd.DataFrame   # one row per (..., rank)
    layout: pd.DataFrame       # DDP buckets and Horovod fusion, side by side
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.steps.empty


def difference_ci(num, den, seed: int = stats.SEED) -> tuple[float, float, float]:
    """median(num) - median(den) and its 95% two-level bootstrap interval (seconds)."""
    num, den = stats._as_reps(num), stats._as_reps(den)
    rng = np.random.default_rng(seed)
    diff = np.exp(stats.boot_medians(num, rng)) - np.exp(stats.boot_medians(den, rng))
    lo, hi = np.percentile(diff, [2.5, 97.5])
    point = stats.median(np.concatenate([stats.finite_values(r) for r in num])) - stats.median(
        np.concatenate([stats.finite_values(r) for r in den]))
    return float(point), float(lo), float(hi)


def _compute_reps(data: Data, r: pd.Series) -> tuple[list, int] | None:
    """The compute-only repetitions matching a throughput row (as compare.exposed_comm)."""
    co = data.compute_only
    if co.empty or "steps" not in co:
        return None
    m = co[(co["run"] == r["run"]) & (co["workload"] == r["workload"])
           & (co["per_rank_batch"] == r["per_rank_batch"]) & (co["knobs"] == r["knobs"])
           & (co["input_mode"] == r["input_mode"])]
    for ranks in (r["world_size"], 1):
        g = m[m["ranks"] == ranks]
        if not g.empty:
            return list(g["steps"]), int(ranks)
    return None


def _ddp(reps: pd.DataFrame) -> tuple[dict[str, float], list[dict], dict[str, Any]] | None:
    """DDP's own medians over the timed steps of a cell's repetitions, each step seen on
    its last rank (the one that finished backward compute last: the step ends when it
    does, and its communication after backward is the exposed part; the other ranks'
    longer communication is their wait for it), the per-rank straggler waits and the
    bucket layout."""
    keys = ("forward_compute_s", "backward_compute_s", "backward_comm_s", "overlap_s")
    parts: dict[str, list[float]] = {k: [] for k in keys}
    exposed: list[float] = []
    waits: dict[int, list[float]] = {}
    layout: dict[str, Any] = {}
    for st in reps["ddp_stats"]:
        if not isinstance(st, dict):
            continue
        layout = st
        ranks = [x for x in st.get("ranks") or [] if x]
        if not ranks:
            continue
        # per DDP iteration present on every rank
        rows = {rk["rank"]: {it: i for i, it in enumerate(rk["iterations"])} for rk in ranks}
        common = sorted(set.intersection(*(set(r) for r in rows.values())))
        by_rank = {rk["rank"]: rk for rk in ranks}
        for it in common:
            ends = {r: by_rank[r]["backward_compute_end_ns"][rows[r][it]] for r in by_rank}
            last = max(ends, key=lambda r: ends[r])
            rk, i = by_rank[last], rows[last][it]
            for k in keys:
                parts[k].append(rk[k][i])
            exposed.append(max(0.0, rk["backward_comm_s"][i] - rk["overlap_s"][i]))
            for r, e in ends.items():
                waits.setdefault(r, []).append((ends[last] - e) / 1e9)
    if not exposed:
        return None
    med = {k: float(np.median(v)) for k, v in parts.items()}
    med["exposed_s"] = float(np.median(exposed))
    med["steps_read"] = len(exposed)
    strag = [{"rank": rank, "wait_s": float(np.median(w)), "wait_max_s": float(np.max(w)),
              "steps": len(w), "source": "DDP: end of backward compute (host clock)"}
             for rank, w in sorted(waits.items())]
    return med, strag, layout


def beside_results(run: Run, cell_id: str, ref: str) -> Path:
    """A file a cell's results name (a timeline, a profiler trace): relative to the folder
    of the cell's results file."""
    p = Path(ref)
    if p.is_absolute():
        return p
    cell = next(c for c in run.cells if c.id == cell_id)
    results = cell.entry.results
    return (run.path / Path(results).parent if results else RunFolder(run.path).cells) / p


def _horovod(data: Data, notes: list[str]) -> pd.DataFrame:
    """One row per horovod_timeline benchmark: medians of its per-step account."""
    tl = data.frames.get("horovod_timeline", pd.DataFrame())
    rows = []
    runs = {r.name: r for r in data.runs}
    for _, r in tl.iterrows():
        path = beside_results(runs[r["run"]], r["cell_id"], r["timeline"])
        try:
            events, complete = read_events(path)
            parsed = parse(events, complete)
            steps = pd.DataFrame(per_step(parsed, r["rank_step_starts"][0],
                                          r["rank_step_times"][0]))
        except (TimelineError, StopIteration) as exc:
            notes.append(f"{r['cell_id']}: Horovod timeline not read: {exc}")
            continue
        if not complete:
            notes.append(f"{r['cell_id']}: the Horovod timeline {path.name} was cut off "
                         f"(the process ended mid-write); its {parsed.events} complete "
                         "events were read.")
        steps = steps[steps["responses"] > 0]
        if steps.empty:
            notes.append(f"{r['cell_id']}: no allreduce of the timed steps in {path.name}.")
            continue
        meta = r["backend_meta"] or {}
        waits: dict[int, list[float]] = {}
        for w in steps["rank_wait_s"]:
            for rank, v in (w or {}).items():
                waits.setdefault(int(rank), []).append(v)
        med = {k: float(np.nanmedian(steps[k])) for k in (
            "allreduce_s", "memcpy_s", "op_s", "queue_s", "negotiate_last_s",
            "negotiate_max_s", "tail_s", "responses", "tensors_per_response",
            "max_response_bytes", "cycle_ms")}
        med["negotiate_last_max_s"] = float(np.nanmax(steps["negotiate_last_s"]))
        rows.append({**{k: r[k] for k in MATCH}, "cell": r["cell_id"],
                     "timeline": str(path), "timeline_step_s": float(np.median(r["steps"])),
                     "fusion_bytes": meta.get("fusion_threshold_bytes"),
                     "cycle_time_ms": meta.get("cycle_time_ms"), **med,
                     "waits": waits, "steps_read": len(steps)})
    return pd.DataFrame(rows)


def where_step_goes(data: Data) -> Why:
    tp, reps = data.throughput, data.throughput_reps
    notes: list[str] = []
    if tp.empty:
        return Why(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), notes)
    hv = _horovod(data, notes)
    rows, strag, layout = [], [], []
    for _, r in tp[tp["backend"] != catalog.reference()].iterrows():
        base = {"run": r["run"], "case": r["case"], "series": r["series"],
                "label": r["label"], "world_size": int(r["world_size"]),
                "step_s": r["step_median"]}
        co = _compute_reps(data, r)
        if co is not None:
            point, lo, hi = difference_ci(r["rep_steps"], co[0])
            base.update(compute_s=stats.median(np.concatenate(co[0])), sub_exposed_s=point,
                        sub_lo=lo, sub_hi=hi, compute_ranks=co[1])
        mine = reps
        for k in POOL_KEY:
            mine = mine[mine[k] == r[k]]
        ddp = _ddp(mine) if "ddp_stats" in mine else None
        if ddp is not None:
            med, st, lay = ddp
            base.update(source="DDP's own statistics", own_compute_s=med["forward_compute_s"]
                        + med["backward_compute_s"], own_comm_s=med["backward_comm_s"],
                        own_hidden_s=med["overlap_s"], own_exposed_s=med["exposed_s"],
                        forward_s=med["forward_compute_s"],
                        backward_s=med["backward_compute_s"], own_steps=med["steps_read"])
            strag += [{**{k: base[k] for k in ("run", "case", "series", "world_size")}, **s}
                      for s in st]
            sizes = lay.get("bucket_sizes") or []
            layout.append({**{k: base[k] for k in ("run", "case", "series", "world_size")},
                           "mechanism": "DDP buckets",
                           "limit": lay.get("bucket_cap_bytes"),
                           "groups_per_step": lay.get("num_buckets_reduced", len(sizes)),
                           "tensors_per_group": (lay.get("num_parameter_tensors", 0)
                                                 / max(len(sizes), 1)),
                           "largest_group_bytes": max(sizes, default=0),
                           "detail": f"{len(sizes)} buckets; gradient_as_bucket_view="
                                     f"{lay.get('gradient_as_bucket_view')}"})
        h = _match(hv, r)
        if h is not None:
            base.update(source="Horovod's timeline", own_comm_s=h["op_s"],
                        own_exposed_s=h["tail_s"],
                        own_hidden_s=max(0.0, h["op_s"] - h["tail_s"]),
                        negotiate_max_s=h["negotiate_max_s"],
                        allreduce_s=h["allreduce_s"], memcpy_s=h["memcpy_s"],
                        negotiate_s=h["negotiate_last_s"], queue_s=h["queue_s"],
                        instrumented_step_s=h["timeline_step_s"], own_steps=h["steps_read"])
            key = {k: base[k] for k in ("run", "case", "series", "world_size")}
            strag.append({**key, "rank": "first to arrive", "wait_s": h["negotiate_last_s"],
                          "wait_max_s": h["negotiate_last_max_s"], "steps": h["steps_read"],
                          "source": "Horovod timeline: negotiation of the step's last tensor "
                                    "(instrumented run; which rank is not written once "
                                    "the tensor is in Horovod's response cache)"})
            strag += [{**key, "rank": rank, "wait_s": float(np.median(w)),
                       "wait_max_s": float(np.max(w)), "steps": len(w),
                       "source": "Horovod timeline: ranks' ready reports (uncached "
                                 "negotiations only)"}
                      for rank, w in sorted(h["waits"].items())]
            fusion = h["fusion_bytes"]
            layout.append({**{k: base[k] for k in ("run", "case", "series", "world_size")},
                           "mechanism": "Horovod fusion", "limit": fusion,
                           "groups_per_step": h["responses"],
                           "tensors_per_group": h["tensors_per_response"],
                           "largest_group_bytes": h["max_response_bytes"],
                           "detail": f"cycle {h['cycle_time_ms']:g} ms set, "
                                     f"{h['cycle_ms']:.2f} ms measured; largest response "
                                     + (f"{h['max_response_bytes'] / fusion * 100:.2g}% of "
                                        "the fusion buffer" if fusion else "")})
        base["disagreement"] = disagreement(base)
        rows.append(base)
    steps = pd.DataFrame(rows)
    if not steps.empty:
        rank = {lab: i for i, lab in enumerate(order(steps["label"]))}
        steps = steps.assign(_o=steps["label"].map(rank)).sort_values(
            ["run", "case", "world_size", "_o", "series"]).drop(columns="_o")
        steps = steps.reset_index(drop=True)
    return Why(steps, pd.DataFrame(strag), pd.DataFrame(layout), notes)


def _match(hv: pd.DataFrame, r: pd.Series) -> pd.Series | None:
    if hv.empty:
        return None
    m = hv
    for k in MATCH:
        m = m[m[k] == r[k]]
    return None if m.empty else m.iloc[0]


def disagreement(row: dict[str, Any]) -> str:
    """'' when the library's own exposed figure lies inside the subtraction's interval,
    else one sentence with the likely cause."""
    if row.get("own_exposed_s") is None or row.get("sub_lo") is None:
        return ""
    own, lo, hi = (float(row[k]) for k in ("own_exposed_s", "sub_lo", "sub_hi"))
    if not np.isfinite(own):
        return ""
    if lo <= own <= hi:
        return "agrees"
    who = row.get("source", "")
    span = f"{own * 1e3:.1f} ms vs the subtraction's [{lo * 1e3:.1f}, {hi * 1e3:.1f}] ms"
    if own < lo:
        evidence = ""
        comp, base = row.get("own_compute_s"), row.get("compute_s")
        if comp is not None and base and np.isfinite(comp):
            evidence = (f"; DDP's own forward+backward compute alone takes "
                        f"{comp * 1e3:.1f} ms, {comp / base:.1f}x the whole compute-only step")
        hidden = row.get("own_hidden_s")
        if "Horovod" in who and hidden is not None and np.isfinite(hidden):
            evidence = (f"; {hidden * 1e3:.1f} ms of Horovod's communication ran while "
                        "backward was computing")
        return (f"{who} counts less exposed communication ({span}): the rest of the step's "
                "excess over compute-only is computation slowed while communication runs "
                "(on a CPU the collective's threads take cores from the model) and framework "
                f"work outside the library's timers (optimizer step, gradient hooks, copies)"
                f"{evidence}")
    return (f"{who} counts more exposed communication ({span}): its timer includes waiting "
            "for the slowest rank and communication the compute-only run's own contention "
            "already absorbs" + (", and the instrumented run (timeline writer busy-polling a "
                                 "core) is slower" if "Horovod" in who else ""))


if __name__ == "__main__":
    w = where_step_goes(build_frames([load_judged_run(p) for p in sys.argv[1:]]))
    with pd.option_context("display.width", 200, "display.max_columns", 40):
        for df in (w.steps, w.stragglers, w.layout):
            print(df.to_string() if not df.empty else "(empty)")
    print("\n".join(w.notes))

"""What the compiler did in a throughput test: compile time, graphs, breaks, recompiles.

Dynamo counts its own work in `torch._dynamo.utils.counters` (process-wide, cumulative):
the frames it converted (every compilation and recompilation), the unique graphs it
made, its graph breaks by reason, and compiled autograd's captures of a backward graph.
A `CompileWatch` reads them before and after each warm-up step and around the timed
rounds, so that a test records:

- the warm-up steps that compiled (any compile event on any rank), their wall time
  (the slowest rank's) summed as `compile_s`: the compilation, apart from the
  steady-state throughput that the timed rounds measure;
- `graphs` and `graph_breaks` (with their reasons) made by this test's model;
- how many subgraphs Dynamo's DDP optimizer cut each graph into (one per DDP bucket:
  what lets allreduces overlap a compiled backward), read from its own log line;
- `recompiles_timed`: compile events during the timed rounds (their steps then time
  the compiler too: the report flags them), and whether the last warm-up step still
  compiled (`still_compiling`: more warm-up steps would have been needed).

    watch = CompileWatch("inductor")        # after the Trainer is built, before a step
    for _ in range(warmup): watch.warmup_step(trainer)
    watch.start_timed(); ...timed rounds...; watch.end_timed()
    rows = backend.all_gather_object(watch.rank_summary())
    fields = merge(rows, mode, optimize_ddp, cache)   # ThroughputRecord's compile fields
"""
from __future__ import annotations

import logging
import re
from typing import Any

from hvd_vs_ddp.backends.compile_support import COMPILED_AUTOGRAD, EAGER

# Dynamo's DDP optimizer says, at INFO, how many buckets (= subgraphs) it made of a graph.
DDP_OPTIMIZER_LOG = "torch._dynamo.backends.distributed"
_BUCKETS = re.compile(r"DDPOptimizer used bucket cap (\d+) and created (\d+) buckets")


def short_reason(message: str) -> str:
    """A graph break's first line and Dynamo's explanation (file paths left out), on one
    line of at most 200 characters."""
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    head = lines[0] if lines else "?"
    why = next((ln.split(":", 1)[1].strip() for ln in lines
                if ln.startswith("Explanation:")), "")
    why = re.sub(r" in file `[^`]*`", "", why)
    text = f"{head}: {why}" if why else head
    return text if len(text) <= 200 else text[:197] + "..."


def snapshot() -> dict[str, Any]:
    from torch._dynamo.utils import counters

    return {"events": int(counters["frames"]["total"])
            + int(counters["compiled_autograd"]["captures"]),
            "graphs": int(counters["stats"]["unique_graphs"]),
            "breaks": {k: int(v) for k, v in counters["graph_break"].items()}}


class _DDPSplits(logging.Filter):
    """Catches the DDP optimizer's bucket line (its logger opened to INFO for it); every
    other record passes only at the level the logger had before."""

    def __init__(self) -> None:
        super().__init__()
        self.logger = logging.getLogger(DDP_OPTIMIZER_LOG)
        self.level = self.logger.getEffectiveLevel()
        self.buckets: list[int] = []
        self.logger.addFilter(self)
        self.logger.setLevel(min(self.level, logging.INFO))

    def filter(self, record: logging.LogRecord) -> bool:
        m = _BUCKETS.search(record.getMessage())
        if m:
            self.buckets.append(int(m.group(2)))
            return record.levelno >= self.level
        return record.levelno >= self.level

    def close(self) -> None:
        self.logger.removeFilter(self)
        self.logger.setLevel(self.level)


class CompileWatch:
    """Compile events per warm-up step and over the timed rounds, on this rank."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.active = mode != EAGER
        self.start = snapshot() if self.active else None
        self._splits = _DDPSplits() if self.active else None
        self.warmup_s: list[float] = []
        self.warmup_events: list[int] = []
        self.timed_events = 0
        self._timed_from: dict[str, Any] | None = None

    def warmup_step(self, trainer) -> float:
        before = snapshot() if self.active else None
        seconds = trainer.step()
        self.warmup_s.append(seconds)
        if before is not None:
            self.warmup_events.append(snapshot()["events"] - before["events"])
        return seconds

    def start_timed(self) -> None:
        if self.active:
            self._timed_from = snapshot()

    def end_timed(self) -> None:
        if self._timed_from is not None:
            self.timed_events = snapshot()["events"] - self._timed_from["events"]

    def rank_summary(self) -> dict[str, Any] | None:
        """This rank's figures (and the DDP optimizer's log opened no longer)."""
        if not self.active or self.start is None:
            return None
        splits: list[int] = []
        if self._splits is not None:
            splits = list(self._splits.buckets)
            self._splits.close()
            self._splits = None
        now = snapshot()
        breaks: dict[str, int] = {}
        for key, n in now["breaks"].items():
            delta = n - self.start["breaks"].get(key, 0)
            if delta > 0:
                reason = short_reason(key)
                breaks[reason] = breaks.get(reason, 0) + delta
        return {"warmup_s": self.warmup_s, "warmup_events": self.warmup_events,
                "timed_events": self.timed_events,
                "graphs": now["graphs"] - self.start["graphs"],
                "graph_breaks": sum(breaks.values()), "break_reasons": breaks,
                "ddp_optimizer_buckets": splits}


def merge(rows: list[dict[str, Any] | None], mode: str, optimize_ddp: str,
          cache: str) -> dict[str, Any]:
    """ThroughputRecord's compile fields from every rank's summary (rank order); {} when
    the test did not compile."""
    if mode == EAGER or not rows or any(r is None for r in rows):
        return {}
    ranks: list[dict[str, Any]] = [r for r in rows if r is not None]
    n = min(len(r["warmup_s"]) for r in ranks)
    step_s = [max(r["warmup_s"][i] for r in ranks) for i in range(n)]
    events = [max(r["warmup_events"][i] for r in ranks) for i in range(n)]
    compiling = [i for i in range(n) if events[i] > 0]
    reasons: dict[str, int] = {}
    for reason, count in ranks[0]["break_reasons"].items():  # every rank's model alike
        reasons[reason] = count
    return {
        "compile_mode": mode,
        "compile_s": float(sum(step_s[i] for i in compiling)),
        "compile_steps": len(compiling),
        "graphs": max(r["graphs"] for r in ranks),
        "graph_breaks": max(r["graph_breaks"] for r in ranks),
        "recompiles_timed": max(r["timed_events"] for r in ranks),
        "compile_info": {
            "optimize_ddp": optimize_ddp,
            "compiled_autograd": mode == COMPILED_AUTOGRAD,
            "cache": cache,
            "warmup_step_s": step_s, "warmup_events": events,
            "still_compiling": bool(n and events[-1] > 0),
            "graph_break_reasons": reasons,
            "ddp_optimizer_buckets": ranks[0].get("ddp_optimizer_buckets", []),
            "ranks": [{"graphs": r["graphs"], "graph_breaks": r["graph_breaks"],
                       "recompiles_timed": r["timed_events"]} for r in ranks]}}

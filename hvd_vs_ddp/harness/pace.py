"""The pace probe: a fixed piece of CPU work timed inside every rank process.

On a shared or virtual host a fresh process keeps a pace for its whole life, some
percent apart from the next process's (docs/methodology.md, "Where the variance comes
from"). The same fixed work, timed in the process, measures that pace, so the verdicts
can take it out (hvd_vs_ddp/run_model/pace.py: a CUPED-style adjustment, gated).

- `pre`: PRE_PRODUCTS products of two SIZE x SIZE float32 matrices, with the rank's own
  intra-op threads, once per process after the suites set the threads and before any
  backend is set up (suites/conftest.py), once every rank of the job has started (a
  gather through the job's store: no probe runs beside another rank's imports). It may
  still run beside the launcher's own threads (torchrun's agent, horovodrun's driver,
  mpirun's daemons).
- `post`: POST_PROBES probes of POST_PRODUCTS each, right after the timed rounds of a
  throughput or compute-only test (suites/test_throughput.py), outside its timed window:
  inside it, a probe's CPU would count in the host-CPU figures of the rounds and a rank
  that probed slower would lend its lag to the next round's first step. A pace the
  process keeps for its life is the same a moment later. These run while the library's
  own threads run (Horovod's background thread spins a core with the MPI controller),
  which is why a verdict may use the probes only through the gate in run_model/pace.py.
- `process`: what the host exposes about why a process is slow, taken at the first
  probe and after the timed rounds (`counters()`): involuntary and voluntary context
  switches (/proc/self/status), time spent waiting on a run queue (/proc/self/schedstat),
  the host's steal time (/proc/stat) and the process's transparent huge pages
  (/proc/self/smaps_rollup). A field the host does not expose is None.

Rates are products per second (higher: a faster process). The record keeps every rank's
figures (the throughput record's `pace_probe`, docs/results-format.md).
`HVD_VS_DDP_PACE_PROBE=off` in the environment of the ranks leaves the probe out (about
a second per process and half a second per timed test): the records then carry no
`pace_probe` and every verdict keeps the unadjusted reading. The project's system tests
set it (tests/system/conftest.py), except the one that checks the probe is recorded.

    from hvd_vs_ddp.harness import pace
    pace.probe(pace.PRE_PRODUCTS)      # products per second in this process now
    python -m hvd_vs_ddp.harness.pace  # one pre probe, the post probes, the counters
    python -m hvd_vs_ddp.harness.pace --json   # one pre probe as JSON (doctor --pace)
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

import torch

SIZE = 384
PRE_PRODUCTS = 800     # ~1 s on one core of the developers' 2-core guest
POST_PRODUCTS = 120    # ~0.15 s each
POST_PROBES = 3
UNIT = f"{SIZE}x{SIZE} float32 matrix products per second"
SWITCH = "HVD_VS_DDP_PACE_PROBE"  # "off": no probe in this process
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def enabled() -> bool:
    return os.environ.get(SWITCH, "on").strip().lower() != "off"


def probe(products: int) -> float:
    """Products per second of `products` fixed matrix products, timed now, with the
    thread count torch has now (the rank's own)."""
    g = torch.Generator().manual_seed(0)
    a = torch.rand(SIZE, SIZE, generator=g)
    b = torch.rand(SIZE, SIZE, generator=g)
    out = torch.empty(SIZE, SIZE)
    torch.mm(a, b, out=out)  # the first call allocates and dispatches
    start = time.perf_counter()
    for _ in range(products):
        torch.mm(a, b, out=out)
    return products / max(time.perf_counter() - start, 1e-9)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def counters() -> dict[str, float | None]:
    """This process's scheduling counters now (None where the host does not expose one)."""
    out: dict[str, float | None] = dict.fromkeys(
        ("nonvoluntary_switches", "voluntary_switches", "run_delay_s", "steal_s",
         "anon_huge_mb"))
    status = _read("/proc/self/status") or ""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "nonvoluntary_ctxt_switches":
            out["nonvoluntary_switches"] = float(value)
        elif key == "voluntary_ctxt_switches":
            out["voluntary_switches"] = float(value)
    sched = (_read("/proc/self/schedstat") or "").split()
    if len(sched) >= 2:
        out["run_delay_s"] = int(sched[1]) / 1e9
    stat = (_read("/proc/stat") or "").split("\n", 1)[0].split()
    if len(stat) > 8 and stat[0] == "cpu":
        out["steal_s"] = int(stat[8]) / _TICK
    for line in (_read("/proc/self/smaps_rollup") or "").splitlines():
        if line.startswith("AnonHugePages:"):
            out["anon_huge_mb"] = int(line.split()[1]) / 1024
    return out


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float | None]:
    """after - before per counter (huge pages: the level after); None where either lacks it."""
    out: dict[str, float | None] = {}
    for key, value in after.items():
        if key == "anon_huge_mb":
            out[key] = value
        elif value is None or before.get(key) is None:
            out[key] = None
        else:
            out[key] = round(float(value) - float(before[key]), 6)
    return out


class PaceLog:
    """One process's probes: the pre probe, then per test its post probes and counters."""

    def __init__(self) -> None:
        self.pre: float | None = None
        self.threads: int | None = None
        self.start: dict[str, Any] = {}

    def run_pre(self, settle: Callable[[], Any] | None = None) -> float | None:
        """The pre probe (None where the probe is switched off), after `settle()` where
        given (the suites: a gather of every rank, so that all have started)."""
        if not enabled():
            return None
        if settle is not None:
            settle()
        self.start = counters()
        self.threads = torch.get_num_threads()
        self.pre = probe(PRE_PRODUCTS)
        return self.pre

    def rank_summary(self, before: dict[str, Any]) -> dict[str, Any] | None:
        """This rank's part of a record's pace_probe, the post probes taken now (call it
        right after the timed rounds; gathered across ranks by the suite). `before`: the
        counters at the start of the timed rounds. None where the probe is off."""
        if self.pre is None:
            return None
        post = [probe(POST_PRODUCTS) for _ in range(POST_PROBES)]
        return {"pre": self.pre, "post": post,
                "threads": torch.get_num_threads(),
                "process": delta(before or self.start, counters())}


def record(ranks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A record's pace_probe from every rank's rank_summary (None when any rank lacks a
    pre probe: a test run outside the suites' configuration)."""
    if not ranks or any(r is None or r.get("pre") is None for r in ranks):
        return None
    return {"unit": UNIT, "pre_products": PRE_PRODUCTS, "post_products": POST_PRODUCTS,
            "ranks": ranks}


if __name__ == "__main__":
    import json
    import sys

    os.environ[SWITCH] = "on"  # asked for by name: measure
    if "--json" in sys.argv[1:]:  # one fresh process's figures (cli/pace_spread.py)
        log = PaceLog()
        log.run_pre()
        print(json.dumps({"pre": log.pre, "threads": log.threads}))
        raise SystemExit(0)
    log = PaceLog()
    before = counters()
    print(f"pre: {log.run_pre():.1f} {UNIT} ({log.threads} threads)")
    summary = log.rank_summary(before)
    assert summary is not None
    print("post:", " ".join(f"{r:.1f}" for r in summary["post"]))
    print(summary["process"])

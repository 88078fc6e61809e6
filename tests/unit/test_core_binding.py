"""Core binding (hvd_vs_ddp/harness/threads.py `bind`): each rank of a node on a disjoint
share of the cores, every thread of it included; nothing bound where ranks outnumber cores.

Each case runs in a fresh process (binding is the process's own state).

    pytest tests/unit/test_core_binding.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, os, sys, threading
from hvd_vs_ddp.harness.threads import bind
early = threading.Event()
t0 = threading.Thread(target=early.wait)   # a thread started before binding
t0.start()
got = bind(int(sys.argv[1]), int(sys.argv[2]))
seen = {}
def look():
    seen["late"] = sorted(os.sched_getaffinity(0))   # a thread started after binding
t1 = threading.Thread(target=look); t1.start(); t1.join()
tasks = {int(t): sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
early.set(); t0.join()
print(json.dumps({"bound": got, "late": seen["late"], "tasks": list(tasks.values())}))
"""
CORES = sorted(os.sched_getaffinity(0))


def _probe(rank: int, ranks: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(rank), str(ranks)],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(len(CORES) < 2, reason="needs 2 usable cores")
def test_two_ranks_get_disjoint_cores_and_every_thread_follows():
    a, b = _probe(0, 2), _probe(1, 2)
    assert a["bound"] and b["bound"] and not set(a["bound"]) & set(b["bound"])
    assert set(a["bound"]) | set(b["bound"]) <= set(CORES)
    for p in (a, b):
        assert p["late"] == p["bound"]  # threads started later inherit it
        assert all(t == p["bound"] for t in p["tasks"])  # and those started before


def test_more_ranks_than_cores_bind_nothing():
    p = _probe(0, len(CORES) + 1)
    assert p["bound"] is None and p["late"] == CORES

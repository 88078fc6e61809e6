"""Benchmark: measure one node, project two: does a calibration from one 'node' carry
to two?

A measurement that reports, not a test: it prints the projected step with its band and
the measured one, and whether the band held it; it fails only when a job fails. (As a
test it bounded one run's speed on a noisy host.) The calibration's mechanism is
unit-tested (tests/unit/test_projection*.py).

The two hosts are the network namespaces of tests/system/test_two_hosts.py (its fixture,
reused), each a 'node' with one rank, joined by a veth link. One 'node' (hvd-node1)
runs 2 DDP ranks over Gloo (tests/ranks/projection_node.py): its compute-only step, its
training step and an allreduce sweep. The projection calibrates DDP on it
(hvd_vs_ddp/projection/model.py calibrate: the hypotheses that fit the node's step,
and what is left carried) and projects 2 ranks on 2 nodes, the link between them
taken from a sweep across the two hosts (as the interconnect table gives it for a real
cluster). Then both hosts run the same training, and the projection must hold the
measurement. Nothing asserted depends on the machine's speed or load: the band the
measurement must fall in is the projection's own, widened (by a factor on either side)
by how much the two runs' own steps spread (their 10-90% ranges); under a heavy load
that band is wide, which is the honest answer of a loaded machine.

Needs root and iproute2 (skips otherwise); about 40 s on 2 cores:
    python -m pytest benchmarks/projection_nodes.py -q -s -p no:cacheprovider
"""
from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import replace

import numpy as np
import pytest

from tests.system import test_two_hosts as hosts
from tests.system.test_two_hosts import IFACE, RDZV_PORT, _env, _tool, _wait

two_hosts = hosts.two_hosts  # the fixture: two network-namespace hosts joined by veth

pytestmark = [pytest.mark.multiproc]
WORKER = "tests/ranks/projection_node.py"
TIMEOUT_S = 180


def _spread(x) -> float:
    lo, med, hi = np.percentile(x, [10, 50, 90])
    return float((hi - lo) / med)


def _library(doc: dict, rng):
    from hvd_vs_ddp.projection.collectives import fit_alpha_beta
    from hvd_vs_ddp.projection.model import Library

    pts = [(p, n, float(np.median(ts))) for p, n, ts in doc["sweep"]]
    draws = tuple(fit_alpha_beta([(p, n, float(np.median(rng.choice(ts, len(ts)))))
                                  for p, n, ts in doc["sweep"]]) for _ in range(50))
    return Library("ddp-gloo", "ddp", measured=fit_alpha_beta(pts), measured_draws=draws,
                   measured_devices=2)


def _twice(launch, logs, what: str) -> None:
    """Run a job; a crashed launch runs once more, its log printed. The crash seen (a rank
    aborting with 'terminate called without an active exception', SIGABRT; 1 run in 4
    failed both attempts here) came from the interpreter's teardown after DDP over Gloo,
    which the worker now skips (tests/ranks/projection_node.py). A crash is not a
    measurement: what is reported comes from the job that completed."""
    for attempt in (1, 2):
        procs = launch(attempt)
        try:
            _wait(procs, logs, TIMEOUT_S)
            return
        except pytest.fail.Exception:
            for p in procs:
                if p.poll() is None:  # its peer crashed: end the survivor's whole group
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=30)
            if attempt == 2:
                raise
            text = "\n".join(log.read_text()[-1500:] for log in logs)
            print(f"\n{what} job crashed, once more:\n{text}")


def _measured_quietly(one_node, two_nodes) -> None:
    """Both measurements, taken again (once) where other work used the cores meanwhile:
    their steps' own spread widens the band, but a load that starts between the one-node
    and the two-node run does not show in either spread (a fresh clone's run here: one
    node 71 ms, two nodes 128 ms while another process started; 70 ms when rerun alone).
    The foreign load is the runner's own measure (hvd_vs_ddp/common/cpu_load.py) and
    limit (run_model/disturbed.py); still disturbed the second time: a skip saying so."""
    from hvd_vs_ddp.common.cpu_load import Meter
    from hvd_vs_ddp.run_model.disturbed import MAX_SHARE

    limit = MAX_SHARE * (os.cpu_count() or 1)
    loads: list[float | None] = []
    for measurement in (0, 1):
        loads = []
        for job, args in ((one_node, ()), (two_nodes, (measurement,))):
            meter = Meter()
            meter.start()
            job(*args)
            loads.append(meter.stop())
        if all(load is None or load <= limit for load in loads):
            return
        print(f"\nforeign load {loads} cores (limit {limit:g}): measured again")
    pytest.skip(f"other work used {loads} cores beside both measurements (limit {limit:g})")


def test_calibration_from_one_node_against_two(two_hosts, tmp_path):
    from hvd_vs_ddp.projection.layout import workload_layout
    from hvd_vs_ddp.projection.model import Inputs, calibrate, project
    from hvd_vs_ddp.run_model import stats

    torchrun = _tool("torchrun")
    h1 = two_hosts.hosts[0]
    env = _env(GLOO_SOCKET_IFNAME=IFACE)
    one_out, log1 = tmp_path / "one.json", tmp_path / "one-node.log"
    two_out = tmp_path / "two.json"
    logs = [tmp_path / f"{host.hostname}.log" for host in two_hosts.hosts]

    def one_node() -> None:
        _twice(lambda attempt: [two_hosts.start(
            h1, [torchrun, "--standalone", "--nproc-per-node", "2", "--no-python",
                 sys.executable, WORKER, "--out", str(one_out)], _env(), log1)],
            [log1], "one-node")

    def two_nodes(measurement: int) -> None:
        def launch(attempt: int) -> list:
            tries = 2 * measurement + attempt - 1  # each try its own rendezvous
            return [two_hosts.start(host, [
                torchrun, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"{h1.hostname}:{RDZV_PORT + tries}",
                "--rdzv-id", f"{two_hosts.tag}-{tries}", "--no-python", sys.executable,
                WORKER, "--out", str(two_out)], env, log)
                for host, log in zip(two_hosts.hosts, logs)]
        _twice(launch, logs, "two-node")

    _measured_quietly(one_node, two_nodes)
    one, two = json.loads(one_out.read_text()), json.loads(two_out.read_text())

    rng = np.random.default_rng(0)
    layout = workload_layout("gpt", one["params"], one["batch"])
    compute = np.exp(stats.boot_medians([one["compute_s"]], rng, 200))
    node = Inputs(layout, one["batch"], compute, [_library(one, rng)], None, per_node=2,
                  gpu=False)
    notes = calibrate(node, {"ddp-gloo": (2, float(np.median(one["ddp_s"])))}, draws=200)
    # two nodes: the same calibrated library; the link is the one between the hosts
    lib = replace(node.libraries[0], **{k: getattr(_library(two, rng), k)
                                        for k in ("measured", "measured_draws")})
    (p,) = project(replace(node, libraries=[lib], per_node=1), [2], draws=200)
    (bare,) = project(replace(node, libraries=[replace(lib, residual_s=0.0, accepted=())],
                              per_node=1), [2], draws=200)
    measured = float(np.median(two["ddp_s"]))
    widen = _spread(two["ddp_s"]) + _spread(one["ddp_s"])
    lo, hi = p.step_s.low / (1 + widen), p.step_s.high * (1 + widen)
    print(f"\none node: step {np.median(one['ddp_s']) * 1e3:.2f} ms, compute "
          f"{np.median(one['compute_s']) * 1e3:.2f} ms; two nodes measured "
          f"{measured * 1e3:.2f} ms; projected {p.step_s.median * 1e3:.2f} ms "
          f"[{p.step_s.low * 1e3:.2f}-{p.step_s.high * 1e3:.2f}] (uncalibrated "
          f"{bare.step_s.median * 1e3:.2f} ms); allowed {lo * 1e3:.2f}-{hi * 1e3:.2f} ms; "
          + " ".join(notes))
    print(f"two nodes: measured {measured * 1e3:.2f} ms "
          f"{'held' if lo <= measured <= hi else 'MISSED'} by the widened band")

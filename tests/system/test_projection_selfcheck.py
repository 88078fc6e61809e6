"""The projection held against this machine: fit on 1 and 2 CPU ranks, predict 3 and 4,
and compare with runs measured at 3 and 4 ranks (issue 19's self-validation).

Two real runs (`hvd-vs-ddp run`, gpt, DDP over Gloo under torchrun and Horovod under
horovodrun --gloo), then `hvd-vs-ddp project FIT --interconnect measured --devices 3,4`.
Checks: DDP's predictions within 25% of the measurements (measured here in three pairs
of runs: -1% to +13%); at each size the projection names the same faster library as the
measurement (DDP, by 47-137% here); Horovod's predictions within a factor of 2.5, a
sanity bound: with 3-4 ranks on 2 cores its background threads (a cycle every
millisecond per rank) compete with the computing ranks, and its measured throughput
itself moved from 105 to 170 samples/s between runs at 3 ranks (model errors +10% to
+81%), so a tighter bound would test the noise.
Horovod's MPI controller is left out: Open MPI's progress engine busy-polls, and with
more ranks than cores the spinning ranks take the cores from the computing ones
(measured: 2x slower than the model at 3-4 ranks), a regime no alpha-beta model covers.

    python -m pytest tests/system/test_projection_selfcheck.py -q     # ~3 minutes
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.runs.load import load_run
from tests.launch import horovod_available

pytestmark = [pytest.mark.multiproc, pytest.mark.slow]
SUITE_ARGS = ("--rounds 5 --steps-per-round 2 --warmup-steps 2 --max-bytes 4194304 "
              "-k 'not convergence and not accuracy'")
DDP_BOUND = 0.25          # |projected / measured - 1|
HOROVOD_FACTOR = 2.5      # projected / measured within [1/2.5, 2.5]


def _run(runs, name: str, sizes: str, backends: str) -> None:
    assert cli(["run", "--backends", backends, "--launchers", "torchrun,horovodrun-gloo",
                "--workloads", "gpt", "--world-sizes", sizes, "--repeat", "1",
                "--runs-dir", str(runs), "--name", name, "--suite-args", SUITE_ARGS]) == 0


def _measured(run_dir) -> dict[tuple[str, int], float]:
    out = {}
    for cell in load_run(run_dir).cells:
        for b in cell.benchmarks:
            r = b.record
            if r.KIND == "throughput" and r.world_size > 1:
                label = "horovod/gloo" if r.backend == "horovod" else r.backend
                out[(label, r.world_size)] = float(np.median(r.samples_per_s))
    return out


def test_fit_on_1_2_ranks_predicts_3_4(tmp_path, capsys):
    ok, _ = horovod_available()
    backends = "ddp-gloo,horovod" if ok else "ddp-gloo"
    runs = tmp_path / "runs"
    _run(runs, "fit", "1,2", backends)
    _run(runs, "target", "3,4", backends)
    out = tmp_path / "projection.json"
    assert cli(["project", str(runs / "fit"), "--devices", "3,4", "--devices-per-node", "4",
                "--interconnect", "measured", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    predicted = {(r["library"], r["devices"]): r["samples_per_s"][0]
                 for r in doc["workloads"][0]["rows"]}
    measured = _measured(runs / "target")
    errors = {k: predicted[k] / measured[k] - 1 for k in measured}
    with capsys.disabled():
        print("\nself-validation (fit 1-2 ranks, predict 3-4): " + ", ".join(
            f"{lib} at {n}: measured {measured[lib, n]:.1f}/s, projected "
            f"{predicted[lib, n]:.1f}/s ({e:+.1%})" for (lib, n), e in sorted(errors.items())))
    assert len(errors) == (4 if ok else 2)
    for (lib, _), e in errors.items():
        if lib == "ddp-gloo":
            assert abs(e) <= DDP_BOUND, errors
        else:
            assert 1 / HOROVOD_FACTOR <= 1 + e <= HOROVOD_FACTOR, errors
    if ok:  # the answer a reader takes away: which library is faster at each size
        for n in (3, 4):
            faster = {name: max(("ddp-gloo", "horovod/gloo"), key=lambda k: d[k, n])
                      for name, d in (("measured", measured), ("projected", predicted))}
            assert faster["measured"] == faster["projected"], (n, measured, predicted)

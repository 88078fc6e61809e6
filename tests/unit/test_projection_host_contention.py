"""The host pipeline's contention with Horovod's spinning threads,
and what of it grows with N (hvd_vs_ddp/projection/host.py `busy_probability`,
`slowest_handoffs`; terms.py `core_wait_us`). Cheap: synthetic layouts, 40 draws, a
Monte Carlo of 20000 samples, no processes.

    python -m pytest -p no:cacheprovider tests/unit/test_projection_host_contention.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

from hvd_vs_ddp.projection import interconnects
from hvd_vs_ddp.projection.host import HostPipeline, busy_probability, slowest_handoffs
from hvd_vs_ddp.projection.layout import Layout
from hvd_vs_ddp.projection.model import Inputs, Library, Links, project
from hvd_vs_ddp.projection.schedule import Grad
from hvd_vs_ddp.projection.terms import TERMS, core_wait, draw


@pytest.mark.parametrize("n,prob", [(1, 1.0), (8, 0.3), (512, 0.02), (512, 1.0)])
def test_the_slowest_ranks_handoffs_are_the_monte_carlo_maximum(n, prob):
    """E[max over n ranks] of two hand-offs each late with `prob` by an exponential wait:
    the quadrature against sampling it."""
    rng = np.random.default_rng(1)
    late = rng.random((6000, n, 2)) < prob
    waits = rng.exponential(0.002, (6000, n, 2)) * late
    sampled = waits.sum(axis=2).max(axis=1).mean()
    assert slowest_handoffs(0.002, n, prob) == pytest.approx(sampled, rel=0.03, abs=2e-6)


def test_a_rare_late_core_on_one_node_is_paid_nearly_every_step_at_scale():
    """What grows with N: one step in a hundred late on a rank is about 1% of a wait at
    one rank and more than two waits' worth at 512 ranks (the slowest of them)."""
    one, many = slowest_handoffs(0.002, 1, 0.01), slowest_handoffs(0.002, 512, 0.01)
    assert one == pytest.approx(2 * 0.01 * 0.002, rel=0.02)
    assert many > 2 * 0.002
    assert slowest_handoffs(0.002, 512, 0.0) == 0.0


def test_the_cores_are_all_busy_only_when_the_loader_nearly_fills_them():
    """Binomial: 4 ranks x 12 workers on 48 cores, each worker busy the share of the
    time its loader must work to keep pace with the step."""
    p = HostPipeline(cpu_s_per_batch=0.4, workers=12, node_cores=48)
    light = busy_probability(p, "horovod", 4, step_s=0.085, comm_share=0.05)  # 4.7 cores
    near = busy_probability(p, "horovod", 4, step_s=0.036, comm_share=0.05)   # 11 cores
    full = busy_probability(p, "horovod", 4, step_s=0.02, comm_share=0.05)    # 20 > 12
    assert light < 1e-6 < near < full == pytest.approx(1.0)
    few = HostPipeline(cpu_s_per_batch=10.0, workers=2, node_cores=48)  # 8 workers, 48 cores
    assert busy_probability(few, "horovod", 4, 0.085, 0.05) == 0.0
    assert busy_probability(p, "horovod", 4, 0.0, 0.05) == 0.0


def _inputs(libs: list[Library], host: HostPipeline | None) -> Inputs:
    grads = [Grad(600_000, (k + 1) / 160) for k in range(160)]
    layout = Layout("synthetic", grads, 1.0, 2.0, "test")
    links = Links(interconnects.get("nvlink3", "intra"), interconnects.get("ib-hdr", "inter"),
                  4)
    return Inputs(layout, 64, np.array([0.084]), libs, links, 4, host=host,
                  pipeline_measured=host is not None)


def _ratio(p, n: int) -> float:
    by = {q.kind: q for q in p if q.devices == n}
    return float(np.median(np.array(by["horovod"].draws) / np.array(by["ddp"].draws)))


def test_horovod_waits_for_cores_more_with_n_where_the_loader_nearly_fills_them():
    """A host pipeline that nearly fills the node (0.9 CPU-s a batch over 12 workers a
    rank, 48 cores for 4 ranks, an 84 ms step): Horovod's hand-offs wait for a core,
    the slowest of N ranks' sets the step, and the ratio falls with N; DDP is not
    charged (its collectives wait on the GPU). Without a host pipeline, nothing."""
    libs = [Library("ddp", "ddp"), Library("horovod", "horovod")]
    host = HostPipeline(cpu_s_per_batch=0.9, workers=12, node_cores=48, measured=True)
    p = project(_inputs(libs, host), [8, 128, 512], draws=40)
    wait = [next(q for q in p if q.kind == "horovod" and q.devices == n).terms["core wait"]
            for n in (8, 128, 512)]
    assert 0 < wait[0] < wait[1] < wait[2]
    assert all("core wait" not in q.terms for q in p if q.kind == "ddp")
    assert _ratio(p, 512) < _ratio(p, 128) < _ratio(p, 8)
    bare = project(_inputs(libs, None), [512], draws=40)
    assert all("core wait" not in q.terms for q in bare)


def test_the_core_wait_has_its_own_draws_and_is_the_same_machine_for_both_libraries():
    """Drawn from a stream of its own (the published rows, with no host pipeline, keep
    every draw they had), the same for a given draw number whatever the library."""
    t = TERMS["core_wait_us"]
    waits = [core_wait(0, i) for i in range(200)]
    assert all(t.low * 1e-6 <= w <= t.high * 1e-6 for w in waits)
    assert core_wait(0, 7) == core_wait(0, 7) != core_wait(0, 8)
    before = draw(np.random.default_rng([0, 7]), "nvlink3", inter="ib-hdr")
    core_wait(0, 7)
    assert draw(np.random.default_rng([0, 7]), "nvlink3", inter="ib-hdr") == before

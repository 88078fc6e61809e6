"""The projection's GPU-side terms (each a mechanism with a source), its headline verdict
and its out-of-sample error: hvd_vs_ddp/projection/terms.py, verdict.py, errors.py.

    pytest tests/unit/test_projection_terms.py -q
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hvd_vs_ddp.projection.errors import band, model_error
from hvd_vs_ddp.projection.model import Band, ModelError, Projected
from hvd_vs_ddp.projection.schedule import Grad, StepCompute, ddp_step, horovod_step
from hvd_vs_ddp.projection.terms import GPU_MEMORY_BW, TERMS, draw
from hvd_vs_ddp.projection.verdict import compare

MID = draw(np.random.default_rng(0), "nvlink3", middle=True)
NONE = replace(MID, contention=0.0, ddp_launch_s=0.0, horovod_launch_s=0.0, ready_wait_s=0.0,
               hop_intra_s=0.0, hop_inter_s=0.0, sync_per_tensor_s=0.0,
               copy_bytes_per_s=1e30, cpu_per_grad_s=0.0, cpu_fwd_per_grad_s=0.0,
               host_tail_per_grad_s=0.0, host_tail_fixed_s=0.0, bucket_view=True,
               gpu_ready_wait=False)


def _grads(n=20, size=4 * 2**20):
    return [Grad(size, (i + 1) / n) for i in range(n)]


def test_every_term_has_a_source_a_range_and_how_it_is_set():
    for t in TERMS.values():
        assert t.source and t.mechanism and t.how_set and 0 <= t.low < t.high, t.name
    assert all(lo <= hi for lo, hi, _ in GPU_MEMORY_BW.values())


def test_draws_are_paired_whatever_the_library():
    a = draw(np.random.default_rng(5), "nvlink2", "mpi", inter="ib-edr")
    b = draw(np.random.default_rng(5), "nvlink2", "mpi", inter="ib-edr")
    assert a == b


def test_negotiation_grows_with_nodes_linearly_for_gloo_and_by_log_for_mpi():
    mpi = replace(MID, controller="mpi")
    gloo = replace(MID, controller="gloo")
    assert mpi.negotiation_s(1, 4) == 0.0
    assert mpi.negotiation_s(64, 4) < mpi.negotiation_s(256, 4) < 2 * mpi.negotiation_s(64, 4)
    assert gloo.negotiation_s(256, 4) > 3.5 * gloo.negotiation_s(64, 4)
    assert gloo.negotiation_s(64, 4) > mpi.negotiation_s(64, 4)


def test_ddp_bucket_copies_and_contention_are_charged_by_name():
    c = StepCompute(0.03, 0.06)
    grads = _grads()
    bare = ddp_step(c, grads, lambda n: n / 20e9, terms=NONE)
    copies = ddp_step(c, grads, lambda n: n / 20e9, terms=replace(NONE, bucket_view=False,
                                                                  copy_bytes_per_s=1e12))
    total = sum(g.bytes for g in grads)
    assert copies.terms["bucket copies in"] == pytest.approx(2 * total / 1e12)
    assert copies.step_s == pytest.approx(bare.step_s + 4 * total / 1e12, rel=1e-6)
    busy = ddp_step(c, grads, lambda n: n / 20e9, terms=replace(NONE, contention=0.2))
    assert busy.terms["contention"] > 0 and busy.step_s > bare.step_s


def test_horovod_fuses_what_the_cpu_enqueued_and_waits_for_all_of_it():
    """The CPU ahead of the GPU: the first cycle takes the first gradient, the next one
    every other (all enqueued by then), launched only when the last exists, so nearly
    the whole allreduce is exposed; with no lead it overlaps."""
    c = StepCompute(0.03, 0.06)
    grads = _grads()
    cost = sum(g.bytes for g in grads) / 20e9  # 4 ms for everything
    ahead = horovod_step(c, grads, lambda n: n / 20e9, terms=replace(
        NONE, cpu_per_grad_s=1e-6, cpu_fwd_per_grad_s=1e-6))
    assert ahead.ops == 2 and ahead.exposed_s == pytest.approx(cost * 19 / 20, rel=0.01)
    paced = horovod_step(c, grads, lambda n: n / 20e9, terms=replace(
        NONE, cpu_per_grad_s=0.003, cpu_fwd_per_grad_s=0.0015))
    assert paced.ops > 5 and paced.exposed_s < cost / 2


def test_horovod_ready_waits_on_its_stream_let_the_thread_go_on():
    """Horovod >= 0.23 (no timeline): the stream waits for the data, the thread keeps
    negotiating, so responses stay small and overlap backward."""
    c = StepCompute(0.03, 0.06)
    grads = _grads()
    lead = dict(cpu_per_grad_s=3e-4, cpu_fwd_per_grad_s=1e-4)
    cpu = horovod_step(c, grads, lambda n: n / 20e9, terms=replace(NONE, **lead))
    gpu = horovod_step(c, grads, lambda n: n / 20e9, terms=replace(NONE, gpu_ready_wait=True,
                                                                   **lead))
    assert gpu.ops > cpu.ops and gpu.exposed_s < cpu.exposed_s


def test_horovod_host_tail_is_exposed_and_ddp_has_none():
    c = StepCompute(0.03, 0.06)
    grads = _grads()
    tail = replace(NONE, host_tail_per_grad_s=2e-5, host_tail_fixed_s=5e-4)
    h = horovod_step(c, grads, lambda n: 0.0, terms=tail)
    assert h.terms["host tail"] == pytest.approx(len(grads) * 2e-5 + 5e-4)
    assert h.step_s == pytest.approx(c.total_s + h.terms["host tail"])
    assert "host tail" not in ddp_step(c, grads, lambda n: 0.0, terms=tail).terms


def test_horovod_synchronize_and_averaging_are_charged_by_name():
    c = StepCompute(0.03, 0.06)
    grads = _grads()
    sync = horovod_step(c, grads, lambda n: 0.0, terms=replace(NONE, sync_per_tensor_s=1e-4))
    assert sync.terms["synchronize"] == pytest.approx(len(grads) * 1e-4, rel=0.05)
    one = [Grad(2**20, 1.0)]
    avg = horovod_step(c, one, lambda n: 0.0, terms=replace(NONE, copy_bytes_per_s=1e9))
    post = horovod_step(c, one, lambda n: 0.0, terms=replace(NONE, copy_bytes_per_s=1e9,
                                                             nccl_avg=False))
    assert post.step_s - avg.step_s == pytest.approx(2**20 / 1e9, rel=0.01)


def _p(kind, n, draws, median=None):
    d = np.asarray(draws, float)
    b = Band.of(d)
    return Projected(kind, n, 1, b, b, b, b, 1, b, tuple(d), {}, kind)


class _In:
    per_node = 4
    model_error = None
    disturbed: list[str] = []


def test_the_verdict_uses_the_reports_margin_and_says_what_would_settle_it():
    rng = np.random.default_rng(0)
    ddp = 100 * (1 + 0.01 * rng.standard_normal(200))
    rows = compare([_p("ddp", 8, ddp), _p("horovod", 8, ddp * 0.85)], _In(), 0.05)
    assert rows[0]["verdict"] == "faster" and rows[0]["faster"] == "ddp"
    assert "ddp is 18% faster than horovod" in rows[0]["text"]
    rows = compare([_p("ddp", 8, ddp), _p("horovod", 8, ddp * 1.01)], _In(), 0.05)
    assert rows[0]["verdict"] == "equivalent"
    wide = ddp * (1 + 0.08 * rng.standard_normal(200))
    rows = compare([_p("ddp", 8, ddp), _p("horovod", 8, wide * 0.96)], _In(), 0.05)
    assert rows[0]["verdict"] == "inconclusive" and "one node of the target" in rows[0]["text"]


def test_a_projection_from_timings_that_kept_other_works_load_is_never_firm():
    """A run whose timings still hold a disturbed repetition (run_model/disturbed.py:
    too few quiet ones to leave it out) gives no firm verdict above one device, however
    narrow the band: the load moved the calibration by an amount no band measures."""
    rng = np.random.default_rng(0)
    ddp = 100 * (1 + 0.01 * rng.standard_normal(200))
    loaded = _In()
    loaded.disturbed = ["ddp-gloo-torchrun-np2"]
    for horovod in (ddp * 0.85, ddp * 1.01):  # firm without the load: faster, equivalent
        assert compare([_p("ddp", 8, ddp), _p("horovod", 8, horovod)], _In(), 0.05)[0][
            "verdict"] != "inconclusive"
        (row,) = compare([_p("ddp", 8, ddp), _p("horovod", 8, horovod)], loaded, 0.05)
        assert row["verdict"] == "inconclusive" and row["faster"] is None, row
        assert row["disturbed_cells"] == ["ddp-gloo-torchrun-np2"]
        assert "ddp-gloo-torchrun-np2" in row["text"] and "quiet host" in row["text"]
    one = compare([_p("ddp", 1, ddp), _p("horovod", 1, ddp)], loaded, 0.05)[0]
    assert one["verdict"] == "equivalent"  # one device communicates nothing


def test_model_error_leaves_a_source_out_and_widens_bands():
    res = [("a", "ddp", 0.1), ("a", "ddp", 0.12), ("a", "ddp", -0.1),
           ("b", "ddp", 0.01), ("b", "ddp", -0.02), ("b", "ddp", 0.015)]
    assert model_error(res, leave_out="a").sd("ddp") < model_error(res).sd("ddp")
    me = model_error(res)
    assert me.sd("ratio") == max(me.total.values())  # unknown: the widest of the others
    draws = np.full(400, 100.0)
    med, lo, hi = band(draws, me, "ddp", np.random.default_rng(0))
    assert lo < 100 < hi and band(draws, None, "ddp", np.random.default_rng(0)) == (
        100.0, 100.0, 100.0)
    assert isinstance(me, ModelError)


def test_model_error_counts_the_inputs_and_the_noise_once():
    """The residuals' spread is split: what the inputs' draws already spread and what
    repeats of one configuration disagree by are not model error; a verdict's band
    (the truth) leaves the noise out, a measurement's band keeps it."""
    from hvd_vs_ddp.projection.errors import Residual, components
    rng = np.random.default_rng(1)
    res = [Residual("s", "ratio", float(x), config=i // 3, input_var=0.02 ** 2)
           for i, x in enumerate(0.05 * rng.standard_normal(60))]
    me = model_error(res)
    c = components(me)["ratio"]
    assert c["inputs"] == pytest.approx(0.02) and 0.03 < c["noise"] < 0.07
    assert c["model"] ** 2 == pytest.approx(max(0.0, c["total"] ** 2 - c["inputs"] ** 2
                                                - c["noise"] ** 2))
    assert me.sd("ratio", measurement=False) == c["model"] < me.sd("ratio")
    # no repeats, no inputs' spread: all of it is the model's, as before the split
    flat = model_error([Residual("s", "ratio", r.value) for r in res])
    assert flat.model["ratio"] == pytest.approx(flat.total["ratio"]) and not flat.noise["ratio"]
    # the variants docs/projection.md measures: all of it model error, as before
    whole = model_error(res, split="none")
    assert whole.model["ratio"] == pytest.approx(c["total"]) and not whole.noise["ratio"]
    assert model_error(res, floor=0.5).model["ratio"] == 0.5
    with pytest.raises(ValueError, match="split 'x'"):
        model_error(res, split="x")
    draws = np.full(400, 1.0)
    truth = band(draws, me, "ratio", np.random.default_rng(0), measurement=False)
    figure = band(draws, me, "ratio", np.random.default_rng(0))
    assert figure[2] - figure[1] > truth[2] - truth[1]


def test_one_node_calibration_keeps_shared_hypotheses_and_reproduces_the_node():
    """Measure one node, project many: the hypotheses kept fit both libraries' steps at
    one node; the projection there gives back the measurement; more nodes cost more."""
    from hvd_vs_ddp.projection import interconnects
    from hvd_vs_ddp.projection.layout import torchvision_layout
    from hvd_vs_ddp.projection.model import Inputs, Library, Links, calibrate, project

    links = Links(interconnects.get("nvlink3"), interconnects.get("ib-hdr"), 1)
    inputs = Inputs(torchvision_layout("resnet18", 32), 32, np.array([0.02]),
                    [Library("ddp", "ddp"), Library("horovod", "horovod")], links, 4)
    measured = {"ddp": (4, 0.0212), "horovod": (4, 0.0225)}
    notes = calibrate(inputs, measured, draws=100)
    kept = {lib.accepted for lib in inputs.libraries}
    assert len(kept) == 1 and len(kept.pop()) == 20  # one machine for both libraries
    assert any("kept 20 of 100" in n for n in notes)
    at_node = {p.library: p for p in project(inputs, [4], draws=100)}
    for lib, (_, step) in measured.items():
        assert at_node[lib].step_s.median == pytest.approx(step, rel=0.02)
    more = {(p.library, p.devices): p for p in project(inputs, [4, 64], draws=100)}
    for lib in measured:
        assert more[lib, 64].step_s.median >= more[lib, 4].step_s.median


def test_every_settable_terms_range_reaches_the_draws():
    """`validation --term NAME=LOW:HIGH` replaces a term's range: each term it accepts
    must be one the draws read (a range nothing reads would change no figure while the
    line says it was replaced); the others are refused with the line naming where
    their range comes from."""
    import dataclasses

    from hvd_vs_ddp.projection import terms

    def drawn(controller: str, optimizer: str) -> tuple:
        d = terms.draw(np.random.default_rng(1), "nvlink3", controller=controller,
                       inter="ib-hdr", optimizer=optimizer)
        return dataclasses.astuple(d) + (terms.core_wait(0, 1),)

    for name in terms.SETTABLE:
        kept = terms.TERMS[name]
        before = {(c, o): drawn(c, o) for c in terms.CONTROLLERS for o in terms.OPTIMIZERS}
        try:
            t = terms.set_range(f"{name}={kept.high * 3 + 1}:{kept.high * 3 + 1}")
            assert t.low == t.high == kept.high * 3 + 1
            after = {k: drawn(*k) for k in before}
        finally:
            terms.TERMS[name] = kept
        assert after != before, name
    for bad, words in (("nope=1:2", "unknown term"), ("rank_jitter=1:2", "set elsewhere"),
                       ("contention=0.3", "NAME=LOW:HIGH"), ("contention=2:1", "LOW <= HIGH"),
                       ("contention=nan:1", "LOW <= HIGH")):
        with pytest.raises(ValueError, match=words):
            terms.set_range(bad)

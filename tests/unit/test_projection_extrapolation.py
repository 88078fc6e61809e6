"""The projection's bands hold where it has never been.

The error is measured by extrapolation (each study's one-node rows predict the rest of
it, hvd_vs_ddp/projection/extrapolation.py), grows with the scale factor in every band
`project` prints, and a CPU run projected to GPU nodes carries the distance.

    .venv/bin/python -m pytest -p no:cacheprovider -q tests/unit/test_projection_extrapolation.py
"""
from __future__ import annotations

import json
import math
import shutil

import pytest

from hvd_vs_ddp.projection import against_published, extrapolation, validation
from hvd_vs_ddp.projection.published_rows import project_all


def test_each_study_is_predicted_from_what_a_user_would_have_measured():
    res = {(r.row, r.key): r for r in extrapolation.residuals(project_all())}
    plain = {(r.id, v.library): math.log(v.published / v.bare)
             for r in project_all() for v in r.values}
    # Bagua: one node of 8 is measured, 16 GPUs is 2x it, calibrated on the 8-GPU row
    b16 = res[("bagua-vgg16-16gpu-scalability", "ddp")]
    assert (b16.measured, b16.scale) == (8, 2.0)
    assert b16.value == pytest.approx(plain[("bagua-vgg16-16gpu-scalability", "ddp")]
                                      - plain[("bagua-vgg16-8gpu-scalability", "ddp")])
    # a one-node row is predicted from the one device's compute time it carries
    b8 = res[("bagua-vgg16-8gpu-scalability", "ddp")]
    assert (b8.measured, b8.value) == (1, pytest.approx(plain[b8.row, "ddp"]))
    # NVIDIA's DGX-2H rows start at 4 nodes: nothing smaller, so from one device, and
    # kept in (the losses no term explains)
    dgx = [r for r in res.values() if "dgx2h" in r.row]
    assert len(dgx) == 6 and all(r.measured == 1 and r.scale >= 64 for r in dgx)
    assert {r.cluster for r in res.values()} >= {"V100 nvlink2 / ib-edr", "A100 nvlink3 / ib-hdr"}


def test_the_error_a_band_carries_grows_with_the_scale_factor():
    me = against_published.current_error()
    for key in ("ddp", "horovod", "ratio"):
        assert me.growth[key] > 0 and me.growth_rows[key] > 0
        sd = [me.sd(key, scale=s) for s in (1, 8, 64, 512)]
        assert sd == sorted(sd) and sd[3] > sd[1] + 0.1 * (key != "ratio")
    # the libraries' growth is never narrower than their pooled one (thin data borrow)
    assert me.growth["ddp"] == pytest.approx(me.growth["horovod"], rel=0.2)


def test_bands_hold_published_values_at_every_scale_factor_band():
    """Held out by source: the bands with the growth hold at least as many published
    values as today's in every scale-factor band, and no band's binomial interval rules
    out the 90% goal; past 64x today's bands held 64% of Horovod's values."""
    for hold in ("source", "cluster"):
        rows = extrapolation.table(extrapolation.judged(hold=hold))
        for t in rows:
            if t["n"] < 10:
                continue
            assert t["after"] >= t["before"], (hold, t)
            from scipy.stats import binomtest
            hi = binomtest(t["after"], t["n"]).proportion_ci(0.95, method="wilson").high
            assert hi >= extrapolation.GOAL_BAND_COVERAGE, (hold, t)
        far = next(t for t in rows if t["key"] == "horovod" and t["band"] == ">=64x")
        assert far["n"] >= 10 and far["after"] / far["n"] >= 0.9, (hold, far)


def test_bands_hold_90_percent_in_every_scale_band_per_library():
    """The goal, by extrapolation from <= 1 node: every published value against the band
    `project` carries (its calibration) and held out by row (a jackknife), >= 90% inside
    per library in every scale band with 10 values or more, and with 5 or more. The
    rows' 95th percentile alone as the growth ("rows") holds 5 of Horovod's 6 values at
    2-8x (Bagua's 32 GPUs from its one node of 8 outside)."""
    for hold in ("none", "row"):
        for t in extrapolation.table(extrapolation.judged(hold=hold)):
            if t["key"] not in extrapolation.LIBS or t["n"] < 5:
                continue
            assert t["after"] / t["n"] >= extrapolation.GOAL_BAND_COVERAGE, (hold, t)
            if t["n"] >= extrapolation.MIN_CLAIM:
                lo, hi = extrapolation.interval(t["after"], t["n"])
                assert lo <= t["after"] / t["n"] <= hi and hi >= 0.95, (hold, t)


def test_every_study_is_held_by_its_own_bands():
    """The growth is calibrated on the studies, not the rows: no study with 5 values or
    more of a library past 2x has more than 10% of them outside its band. With the first
    round's growth Bagua's VGG16 over 100 GbE had 2 of 7 Horovod values outside (the
    quiet studies' many small residuals outnumbered its losses)."""
    j = extrapolation.judged(hold="none")
    for lib in extrapolation.LIBS:
        for source in {x.r.source for x in j}:
            xs = [x for x in j if x.r.key == lib and x.r.source == source and x.r.scale >= 2]
            if len(xs) >= 5:
                inside = sum(abs(x.r.value) <= x.after for x in xs)
                assert inside / len(xs) >= 0.9, (lib, source, inside, len(xs))


def test_held_out_by_source_only_the_study_unlike_any_other_is_missed():
    """Out of sample by study no fit reaches Bagua's losses (0.20 per doubling where no
    other study loses more than 0.03): its values are the only ones outside, said in
    docs/projection.md; DDP past 64x has one value, too few to claim a coverage."""
    for hold in ("source", "cluster"):
        rows = extrapolation.table(extrapolation.judged(hold=hold))
        assert {s for t in rows for s in t["missed"]} <= {"bagua-benchmark"}, hold
        far = next(t for t in rows if t["key"] == "ddp" and t["band"] == ">=64x")
        assert far["n"] < extrapolation.MIN_CLAIM
    line = extrapolation.sources_line()
    assert line.index("bagua-benchmark") < line.index("csc-ml-benchmarks")


def test_the_growth_is_calibrated_on_studies_not_rows():
    from hvd_vs_ddp.projection.errors import model_error, published_residuals
    projected = project_all()
    res = extrapolation.residuals(projected)
    base = model_error(published_residuals(projected))
    now = extrapolation.fit(res, base=base)
    first = extrapolation.fit(res, base=base, method="rows")
    for lib in extrapolation.LIBS:
        assert now.growth[lib] > 1.2 * first.growth[lib], (now.growth, first.growth)
    assert now.growth["ratio"] == first.growth["ratio"]
    with pytest.raises(ValueError, match="method"):
        extrapolation.fit(res, base=base, method="median")


def test_with_the_grown_error_every_firm_verdict_agrees_and_the_rest_is_said():
    s = against_published.summary(against_published.loso(growth=True))
    # 9 firm at 200 draws, 15 at the 100 project uses: CSC's Puhti rows sit on the margin
    assert s["firm_verdicts"] >= 5 and s["firm_agree"] == s["firm_verdicts"]
    assert s["coverage"] >= extrapolation.GOAL_BAND_COVERAGE, validation.goals_line(s)
    line = validation.goals_line(s)
    if s["verdict_agreement"] < against_published.GOAL_AGREEMENT:
        assert "no firm verdict is possible on" in line
        assert s["inconclusive_rows"][0] in line


def _project(tmp_path, *args, draws=40):
    from hvd_vs_ddp.cli.app import main
    out = tmp_path / "p.json"
    assert main(["project", *args, "--draws", str(draws), "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_project_from_one_device_widens_its_band_with_the_devices(tmp_path):
    pytest.importorskip("torch")
    doc = _project(tmp_path, "--compute-ms", "100", "--model", "resnet50", "--batch-size",
                   "64", "--devices", "8,64,512", "--devices-per-node", "4",
                   "--interconnect", "ib-hdr", "--intra-node", "nvlink3", draws=400)
    w = doc["workloads"][0]
    for lib in ("ddp", "horovod"):
        eff = {r["devices"]: r["efficiency"] for r in w["rows"] if r["library"] == lib}
        width = [eff[n][2] - eff[n][1] for n in (8, 64, 512)]
        assert width == sorted(width) and eff[512][1] < 0.6, (lib, eff)
    assert any("512 devices (512x what was measured)" in n for n in w["notes"])
    # the verdict the error at the measured size would give is said, and why not firm
    for c in w["comparison"]:
        if c["devices"] > 1:
            assert c["verdict"] == "inconclusive" and c["verdict_without_growth"] in (
                "equivalent", "faster"), c
            assert f"no firm verdict is possible at {c['devices']}x what was measured" \
                in c["text"] and "grown by extrapolation" in c["text"], c
    assert any("extrapolation residuals of" in n for n in w["notes"])


def test_a_cpu_run_projected_to_gpu_nodes_carries_the_distance(tmp_path):
    from tests.bad_inputs import SMALL
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    doc = _project(tmp_path, str(run), "--devices", "8,64", "--devices-per-node", "8",
                   "--interconnect", "ib-hdr")
    for w in doc["workloads"]:
        assert any("CPU-to-GPU distance" in n and "hvd-vs-ddp run" in n for n in w["notes"])
        for c in w["comparison"]:
            lo, hi = c["ratio"][1], c["ratio"][2]
            assert hi / lo > 2.0, c  # never the run's +-0.3%
        for r in w["rows"]:  # nor a library's band
            if r["devices"] > 1:
                sps = r["samples_per_s"]
                assert sps[2] / sps[1] > 1.5, r
            assert not c["verdict"].startswith("faster"), c
            assert "measured no GPU" in c["text"] and "--world-sizes 1," in c["text"], c

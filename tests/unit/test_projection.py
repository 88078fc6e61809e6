"""The projection's parts: the alpha-beta model, the schedules, the interconnect table,
the layout tracer, the validation against published results, and the report section.

    pytest tests/unit/test_projection.py -q
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.common.errors import InputError, UnknownName
from hvd_vs_ddp.projection import architectures, interconnects, rows_file, validation
from hvd_vs_ddp.projection.collectives import Cost, Fabric, fit_alpha_beta
from hvd_vs_ddp.projection.schedule import Grad, StepCompute, buckets, ddp_step, horovod_step

NV = Cost(alpha=5e-6, beta=200e9)
IB = Cost(alpha=10e-6, beta=50e9)


def test_ring_matches_the_formula_and_is_free_on_one_device():
    f = Fabric(devices=8, per_node=8, intra=NV, algorithm="ring")
    n = 100 * 2**20
    assert f.allreduce(n) == pytest.approx(2 * 7 * NV.alpha + 2 * 7 / 8 * n / NV.beta)
    assert f.at(1).allreduce(n) == 0.0
    assert f.allreduce(0) == 0.0


def test_between_nodes_the_slower_link_sets_the_bandwidth():
    one = Fabric(8, 8, NV, IB, "ring")
    two = Fabric(16, 8, NV, IB, "ring")
    n = 100 * 2**20
    assert two.allreduce(n) > one.allreduce(n) * 3  # 50 GB/s per node, not 200 per GPU
    assert two.allreduce(n) == pytest.approx(2 * 15 * IB.alpha + 2 * 15 / 16 * n / IB.beta)
    with pytest.raises(ValueError, match="inter-node link"):
        Fabric(16, 8, NV, None)


def test_tree_wins_small_messages_at_scale_and_auto_takes_the_faster():
    f = Fabric(512, 8, NV, IB)
    small, big = 4096, 512 * 2**20
    assert f.tree(small) < f.ring(small)
    assert f.allreduce(small) == min(f.ring(small), f.tree(small))
    assert f.allreduce(big) == min(f.ring(big), f.tree(big))


def test_hierarchical_is_the_ring_on_one_node():
    f = Fabric(8, 8, NV, IB, "hierarchical")
    assert f.allreduce(2**20) == pytest.approx(f.ring(2**20))
    assert Fabric(64, 8, NV, IB, "hierarchical").allreduce(2**20) > 0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(alpha=st.floats(1e-6, 1e-3), beta=st.floats(1e8, 1e11),
       sizes=st.lists(st.integers(1, 2**26), min_size=3, max_size=8, unique=True))
def test_fit_recovers_alpha_and_beta_from_exact_points(alpha, beta, sizes):
    pts = [(p, n, 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / beta)
           for p in (2, 4) for n in sizes]
    fit = fit_alpha_beta(pts)
    assert fit.alpha == pytest.approx(alpha, rel=1e-6, abs=1e-12)
    assert fit.beta == pytest.approx(beta, rel=1e-6)


def test_fit_needs_two_sizes_at_two_ranks_or_more():
    with pytest.raises(ValueError, match="two measured"):
        fit_alpha_beta([(1, 1024, 1e-5), (2, 1024, 1e-4)])


def _grads(n=10, size=4 * 2**20):
    return [Grad(size, (i + 1) / n) for i in range(n)]


def test_no_communication_costs_nothing():
    c = StepCompute(0.03, 0.06, 0.01)
    for step in (ddp_step(c, _grads(), lambda n: 0.0),
                 horovod_step(c, _grads(), lambda n: 0.0, cycle_s=0.0)):
        assert step.step_s == pytest.approx(c.total_s) and step.exposed_s == 0


def test_ddp_hides_all_but_what_outlasts_backward():
    c = StepCompute(0.03, 0.06)
    grads = _grads()
    fast = ddp_step(c, grads, lambda n: 1e-4)
    assert fast.exposed_s == pytest.approx(1e-4)  # the last bucket, launched at the end
    slow = ddp_step(c, grads, lambda n: n / 1e9)  # 40 MiB at 1 GB/s: comm-bound
    assert slow.exposed_s > 0.01
    assert slow.step_s == pytest.approx(c.total_s + slow.exposed_s)


def test_ddp_buckets_follow_the_caps_or_ddps_own_sizes():
    grads = _grads(10, 2**20)
    caps = buckets(grads, cap_bytes=4 * 2**20)
    assert [len(b) for b in caps] == [1, 4, 4, 1]  # first bucket 1 MiB, then 4 MiB
    own = buckets(grads, cap_bytes=4 * 2**20, sizes=[5 * 2**20, 5 * 2**20])
    assert [len(b) for b in own] == [5, 5]


def test_horovod_fuses_what_is_ready_in_one_cycle():
    c = StepCompute(0.0, 0.010)
    at_once = [Grad(2**20, 0.0) for _ in range(8)]
    s = horovod_step(c, at_once, lambda n: 1e-3, fusion_bytes=64 * 2**20, cycle_s=1e-3)
    assert s.ops == 1
    small_buffer = horovod_step(c, at_once, lambda n: 1e-3, fusion_bytes=2 * 2**20,
                                cycle_s=1e-3)
    assert small_buffer.ops == 4
    # a longer cycle makes the last gradient wait for the next wake-up
    late = [Grad(2**20, 1.0)]
    assert (horovod_step(c, late, lambda n: 0.0, cycle_s=0.004).exposed_s
            > horovod_step(c, late, lambda n: 0.0, cycle_s=0.001).exposed_s)


def test_unknown_links_are_one_clear_error():
    with pytest.raises(UnknownName, match="unknown interconnect 'ib-zdr'.*ib-hdr.*measured"):
        interconnects.get("ib-zdr", "inter")
    with pytest.raises(UnknownName, match="intra-node link 'ib-hdr'"):
        interconnects.get("ib-hdr", "intra")
    rows = interconnects.table_rows()
    assert all(r["source"] and r["gbit_s"] > 0 for r in rows)


def test_layout_of_a_workload_holds_every_gradient_once():
    pytest.importorskip("torch")
    from hvd_vs_ddp.projection.layout import LayoutError, model_layout, workload_layout
    from hvd_vs_ddp.workloads import registry

    lay = workload_layout("gpt", {}, 4)
    model = registry.get("gpt", batch_size=4).build_model(False)
    params = [p for p in model.parameters() if p.requires_grad]
    assert len(lay.grads) == len(params)
    assert lay.grad_bytes == sum(p.numel() * p.element_size() for p in params)
    assert all(0 <= g.ready <= 1 for g in lay.grads)
    assert [g.ready for g in lay.grads] == sorted(g.ready for g in lay.grads)
    with pytest.raises(LayoutError, match="cannot analyse model 'nope'"):
        model_layout("nope", 4)


def test_validation_out_of_sample_meets_its_error_and_coverage_goals():
    rows, pairs = validation.rows(), validation.h2h_rows()
    assert len(rows) >= 30 and len(pairs) >= 20
    for r in rows + pairs:
        assert r["source"] and r["url"].startswith("https://") and r["compute_source"], r["id"]
    assert all(r["assumptions"] and r["reading"] and r["scope"] for r in pairs)
    assessed = validation.loso()
    s = validation.summary(assessed)
    assert s["head_to_head_rows"] >= 20
    assert all(math.isfinite(v.error) for r in assessed for v in r.values)
    # issue 29's goals that the model meets, out of sample (docs/projection.md)
    assert max(s["median_abs_error"].values()) <= validation.GOAL, validation.goals_line(s)
    assert s["coverage"] >= validation.GOAL_COVERAGE, validation.goals_line(s)
    # the projected ratios' measurement bands hold the published ratios; the verdict
    # agreement goal itself is not met (docs/projection.md: Puhti's rows stay
    # inconclusive, three of Bagua's contradict each other); what it reaches is held
    assert s["ratio_coverage"] >= validation.GOAL_COVERAGE, validation.goals_line(s)
    assert s["verdict_agreement"] >= 0.5 and s["firm_agree"] >= 12, validation.goals_line(s)


def test_every_head_to_head_row_reports_both_errors_and_a_verdict():
    for r in validation.loso():
        if r.head_to_head:
            assert r.published_verdict and r.verdict and r.ratio[1] <= r.ratio[0] <= r.ratio[2]
            assert len(r.values) in (0, 2)  # time-only rows carry the ratio alone
            m = r.ratio_measurement  # holds a figure: the noise widens the verdict's band
            assert m[1] <= r.ratio[1] and r.ratio[2] <= m[2]
            assert r.config_verdict in (r.published_verdict, validation.CONTRADICTORY)


def test_repeats_of_a_configuration_judge_its_published_verdict():
    """Bagua's three VGG16 figures at 128 GPUs over 100 GbE (0.922, 1.091, 1.036) are
    one configuration whose repeats disagree; CSC's dates of one cluster agree."""
    rows = {r.id: r for r in validation.loso()}
    bagua = [r for r in rows.values() if r.id.startswith("bagua-vgg16-128gpu")
             and not r.id.endswith("-10g")]
    assert len(bagua) == 3 and len({r.config for r in bagua}) == 1
    assert all(r.config_verdict == validation.CONTRADICTORY for r in bagua)
    mahti = [r for r in rows.values() if r.id.startswith("csc-mahti")]
    assert len({r.config for r in mahti}) == 1
    assert {r.config_verdict for r in mahti} == {"faster (ddp)"}


def _doc(tmp_path):
    import shutil

    from tests.bad_inputs import SMALL
    run = tmp_path / "run"
    shutil.copytree(SMALL, run)
    return run


def test_project_writes_a_labelled_projection_the_report_shows(tmp_path):
    from hvd_vs_ddp.cli import main
    from hvd_vs_ddp.reports import build_report

    run = _doc(tmp_path)
    assert main(["project", str(run), "--devices", "8,64", "--devices-per-node", "8",
                 "--interconnect", "ib-hdr", "--draws", "40"]) == 0
    doc = json.loads((run / "projection.json").read_text())
    assert doc["label"].startswith("PROJECTION")
    rows = doc["workloads"][0]["rows"]
    assert {r["devices"] for r in rows} == {8, 64}
    for r in rows:
        med, lo, hi = r["samples_per_s"]
        assert lo <= med <= hi and 0 < r["efficiency"][0] <= 1.0 + 1e-9
    paths = build_report([run], tmp_path / "out" / "report.html")
    md = paths.markdown.read_text()
    assert "## Projection" in md and "not measured" in md and "Validation against" in md
    assert "Horovod / DDP, projected" in md and "head-to-head" in md
    assert md.index("Horovod / DDP, projected") < md.index("Validation against")
    assert doc["format_version"] == 2
    # the answer block says where the measured answers hold, and what the projection
    # onto GPUs expects, labelled (issue 29)
    assert "These measured answers hold for CPU only" in md and "cores shared" in md
    assert "needs its one-GPU step" in md  # a CPU run's projection is no GPU expectation
    verdicts_json = json.loads((tmp_path / "out" / "verdicts.json").read_text())
    assert verdicts_json["holds_for"] and "hold for" in verdicts_json["holds_for"][0]
    for c in doc["workloads"][0]["comparison"]:
        assert c["verdict"] in ("faster", "equivalent", "inconclusive") and c["text"]
        assert c["ratio"][1] <= c["ratio"][0] <= c["ratio"][2]
    # a broken projection.json is a note, never a failed report
    (run / "projection.json").write_text("{\"format\": \"hvd-vs-ddp/projection\"")
    md = build_report([run], tmp_path / "out2" / "report.html").markdown.read_text()
    assert "unreadable projection" in md


def test_measured_fits_come_from_each_librarys_own_sweep(tmp_path):
    from hvd_vs_ddp.projection.inputs import from_run

    run = _doc(tmp_path)
    ((_, inputs, measured),) = from_run(run, links=None, per_node=4)
    fitted = {lib.label: lib.measured for lib in inputs.libraries}
    assert set(fitted) >= {"ddp-gloo", "horovod/gloo"}
    assert all(c is not None and c.alpha >= 0 and c.beta > 0 for c in fitted.values())
    assert fitted["ddp-gloo"] != fitted["horovod/gloo"]
    assert {m.devices for m in measured} >= {2}
    assert np.all(inputs.compute_s > 0)


@pytest.mark.parametrize("name, params, tensors", [
    ("bert-large", 336.2e6, 398), ("BERT_base-uncased", 110.1e6, 206), ("gpt2", 124.4e6, 148),
    ("gpt2-medium", 354.8e6, 292)])
def test_published_transformers_have_their_published_sizes(name, params, tensors):
    """BERT and GPT-2 by name (hvd_vs_ddp/projection/architectures.py): the parameter
    counts of the papers and of Hugging Face's BertForPreTraining / GPT2LMHeadModel (the
    output layer tied to the word embeddings, so counted once), and their tensor count."""
    from hvd_vs_ddp.projection.layout import model_layout

    lay = model_layout(name, 2)
    assert len(lay.grads) == tensors
    assert abs(lay.grad_bytes / 4 - params) / params < 0.002, lay.grad_bytes / 4
    assert lay.backward_flops > lay.forward_flops > 0
    # the tied embedding's gradient is complete only at the end of backward
    assert max(g.bytes for g in lay.grads if g.ready == 1.0) >= 30522 * 768 * 4


def test_a_sequence_length_after_the_name_and_unknown_names():
    from hvd_vs_ddp.projection import architectures
    from hvd_vs_ddp.projection.layout import LayoutError, model_layout

    assert architectures.find("bert-large@512")[1] == 512
    assert architectures.find("bert-large@513") is None  # past its 512 positions
    assert architectures.find("bert-huge") is None
    short, long = model_layout("bert-base", 2), model_layout("bert-base@512", 2)
    assert long.forward_flops > 3.5 * short.forward_flops
    with pytest.raises(LayoutError, match="bert-large"):  # the error lists them
        model_layout("bert-huge", 2)


def test_a_validation_row_names_its_model_as_a_paper_does(tmp_path):
    """Rows from elsewhere (judged on results not in the repository) may spell a model
    'ResNet-50' or name a transformer: validation reads the model as `project --model`
    does, so such a row is projected, not refused."""
    from hvd_vs_ddp.projection.layout import model_layout, torchvision_name

    assert [torchvision_name(n) for n in ("ResNet-50", "VGG-16", "Inception-v3",
                                          "ResNeXt-50 32x4d", "ViT-B/16", "bert-large")] == \
        ["resnet50", "vgg16", "inception_v3", "resnext50_32x4d", "vit_b_16", None]
    assert validation._layout("ResNet-50", 4).grad_bytes == model_layout("resnet50", 4).grad_bytes
    assert len(validation._layout("bert-large", 4).grads) == 398


HEADER = "id,model,batch,devices,per_node,intra,inter,compute_ms,ddp,horovod"
MAHTI = "x1,ResNet-50,32,8,4,NVLink 3,HDR InfiniBand,40.8,5900,5250"


@pytest.mark.parametrize("content", [
    "\ufeff" + HEADER + "\r\n" + MAHTI + "\r\n",                   # Excel: BOM, CRLF
    HEADER.replace(",", ", ") + "\n" + MAHTI.replace(",", ", ") + "\n",  # spaces
    HEADER.replace(",", ";") + "\n" + MAHTI.replace(",", ";").replace("40.8", "40,8"),
    HEADER.replace(",", "\t") + "\n" + MAHTI.replace(",", "\t"),
    "\nModel, Batch Size, GPUs, GPUs per node, Intra-node, Interconnect, Compute ms, DDP, "
    'Horovod\n\nResNet-50, 32, 8, 4, NVLink 3, HDR InfiniBand, 40.8, "5,900", "5,250"\n'])
def test_a_rows_file_as_spreadsheets_export_it(tmp_path, content):
    """The same published row however a spreadsheet wrote it (before, a byte-order mark,
    ';', spaces after commas and 'GPUs' were each "missing column")."""
    f = tmp_path / "rows.csv"
    f.write_text(content, encoding="utf-8")
    (row,) = rows_file.read(f)
    assert {k: row[k] for k in ("batch", "devices", "per_node", "compute_ms", "ddp",
                                "horovod", "inter")} == {
        "batch": "32", "devices": "8", "per_node": "4", "compute_ms": "40.8",
        "ddp": "5900.0", "horovod": "5250.0", "inter": "HDR InfiniBand"}


def test_a_rows_file_may_give_throughput_per_gpu_or_times(tmp_path):
    """Papers give img/s per GPU as often as for the job: read as the job's samples/s
    (before, any unit other than samples_per_s was taken for times and inverted); a unit
    it does not know is one line."""
    f = tmp_path / "rows.csv"
    f.write_text(HEADER + ",unit\n" + MAHTI.replace("5900,5250", "737.5,656.25")
                 + ",img/s per GPU\n" + MAHTI.replace("5900,5250", "100,110") + ",seconds\n")
    per_gpu, times = rows_file.read(f)
    assert (float(per_gpu["ddp"]), float(per_gpu["horovod"]), per_gpu["unit"]) == \
        (5900.0, 5250.0, "samples_per_s")
    assert times["unit"] == "time"
    f.write_text(HEADER + ",unit\n" + MAHTI + ",furlongs\n")
    with pytest.raises(rows_file.RowsError, match="line 2: unit 'furlongs' is not one of "
                                                  "samples_per_s"):
        rows_file.read(f)


@pytest.mark.parametrize("line, error", [
    ("x1,resnet50,32,8,4,nvlink3,ib-hdr,-40.8,5900,5250",
     "line 2: compute_ms must be a number > 0, not '-40.8'"),
    ("x1,resnet50,0,8,4,nvlink3,ib-hdr,40.8,5900,5250", "line 2: batch must be a whole"),
    ("x1,resnet50,32.5,8,4,nvlink3,ib-hdr,40.8,5900,5250", "batch must be a whole number"),
    ("x1,resnet50,32,8,4,nvlink3,ib-hdr,nan,5900,5250", "compute_ms must be a number > 0"),
    ("x1,resnet50,32,8,4,nvlink3,ib-hdr,40.8,inf,5250", "ddp must be a number > 0"),
    ("x1,resnet50,32,8,4,nvlink3,ib-hdr,40.8,fast,5250", "ddp 'fast' is not a number"),
    ("x1,resnet50,32,8,4,nvlink3,ib-hdr,40.8,5900,", "line 2: horovod is empty"),
    ("x1,resnet50,32,8,4,nvlink3,ib-hdr,40.8,5900,5250,7", "11 fields under a header of 10")])
def test_a_bad_value_in_a_rows_file_is_one_line_naming_it(tmp_path, line, error):
    f = tmp_path / "rows.csv"
    f.write_text(HEADER + "\n" + line + "\n")
    with pytest.raises(rows_file.RowsError, match=re.escape(error)):
        rows_file.read(f)
    f.write_bytes(b"id,model\x00\x01")
    with pytest.raises(rows_file.RowsError, match="NUL bytes"):
        rows_file.read(f)


@pytest.mark.parametrize("written, name", [
    ("MobileNetV2", "mobilenet_v2"), ("InceptionV3", "inception_v3"),
    ("ResNet-50 v1.5", "resnet50"), ("ResNet50v1.5", "resnet50"),
    ("Wide ResNet-50-2", "wide_resnet50_2"), ("ViT-L/16", "vit_l_16"),
    ("SqueezeNet 1.1", "squeezenet1_1"), ("EfficientNet-B7", "efficientnet_b7"),
    ("ConvNeXt-Tiny", "convnext_tiny"), ("regnet_x_16gf", "regnet_x_16gf"),
    ("SqueezeNet", None), ("RegNetX-16GF", None), ("LLaMA-7B", None)])
def test_any_torchvision_classifier_as_papers_write_it(written, name):
    """Beyond the common ones: any classifier of the installed torchvision, case and
    punctuation aside; a name that could be two of them (SqueezeNet 1.0 or 1.1; RegNetX
    1.6GF or 16GF) is none (the command's error then lists what it knows)."""
    pytest.importorskip("torchvision")
    from hvd_vs_ddp.projection.layout import torchvision_name

    assert torchvision_name(written) == name


def test_a_name_that_could_be_two_models_says_which():
    pytest.importorskip("torchvision")
    from hvd_vs_ddp.projection.layout import LayoutError, model_layout

    with pytest.raises(LayoutError, match="'SqueezeNet' could be any of squeezenet1_0, "
                                          "squeezenet1_1: name one"):
        model_layout("SqueezeNet", 4)


def test_a_model_the_meta_device_cannot_build_is_built_then_traced():
    """RegNet computes its widths from tensors' values, which the meta device has not:
    it was an uncaught NotImplementedError; now it is built on the CPU and traced."""
    pytest.importorskip("torchvision")
    from hvd_vs_ddp.projection.layout import model_layout

    lay = model_layout("RegNetY-400MF", 4)
    assert len(lay.grads) == 225 and 16 < lay.grad_bytes / 2**20 < 18


@pytest.mark.parametrize("written, key, seq", [
    ("GPT-2", "gpt2", 1024), ("GPT-2 Medium", "gpt2-medium", 1024),
    ("GPT-2 XL@256", "gpt2-xl", 256), ("BERT Large", "bert-large", 128),
    ("BERT-Large (uncased)", "bert-large", 128), ("bert_base_cased", "bert-base", 128)])
def test_transformers_as_papers_write_them(written, key, seq):
    assert architectures.find(written) == (architectures.ARCHS[key], seq)


def test_rows_from_elsewhere_are_judged_out_of_sample(tmp_path, capsys):
    """`validation --rows FILE`: published rows not in the repository (head_to_head.csv's
    columns; a model as a paper spells it) are projected with the repository's error and
    judged; a file it cannot use is one line, exit 2."""
    header, *rows = validation.H2H.read_text().splitlines()
    mahti = next(r for r in rows if r.startswith("csc-mahti-resnet50-8gpu-synthetic-2023"))
    good = tmp_path / "more.csv"
    good.write_text(header + "\n" + ("new-" + mahti).replace(",resnet50,", ",ResNet-50,")
                    + "\n")
    (row,) = validation.judge_file(good)  # default draws: the caches the tests share
    assert row.id.startswith("new-csc-mahti") and row.published_verdict == "faster (ddp)"
    assert row.verdict in ("faster (ddp)", "inconclusive") and len(row.values) == 2
    assert validation.main(["--rows", str(good)]) == 0
    assert "projected with the model error of every source" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,source,model\nx,y,resnet50\n")
    assert validation.main(["--rows", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 2: missing column" in err[0], err


@pytest.mark.parametrize("written, name", [
    ("HDR InfiniBand", "ib-hdr"), ("IB-EDR", "ib-edr"), ("100GbE", "eth-100g"),
    ("25 GbE", "eth-25g"), ("100G RoCE", "roce-100g"), ("NVLink 3", "nvlink3"),
    ("PCIe Gen4", "pcie4"), ("ib-ndr", "ib-ndr"), ("FDR InfiniBand", "ib-fdr"),
    ("IB QDR", "ib-qdr"), ("HDR100", "ib-hdr100"), ("NDR200", "ib-ndr200"),
    ("40GbE", "eth-40g"), ("10 Gigabit Ethernet", "eth-10g"), ("200G RoCE", "roce-200g"),
    ("EFA", "efa-100g"), ("Elastic Fabric Adapter", "efa-100g"),
    ("HPE Slingshot 11", "slingshot-11"), ("Slingshot-10", "slingshot-10"),
    ("Omni-Path", "opa-100g"), ("OPA", "opa-100g")])
def test_links_as_people_write_them(written, name):
    assert interconnects.get(written).name == name


@pytest.mark.parametrize("family, hint", [
    ("NVSwitch", "nvlink3: DGX A100"), ("NVLink", "nvlink1"), ("InfiniBand", "ib-hdr"),
    ("Slingshot", "slingshot-11"), ("RoCE", "roce-100g"), ("Ethernet", "eth-25g")])
def test_a_family_of_links_is_one_line_saying_what_to_write(family, hint):
    """'NVSwitch' or 'InfiniBand' name no one rate: one line naming the choices (before,
    'nvswitch' was an unknown link among a list of names that did not say why)."""
    with pytest.raises(InputError) as err:
        interconnects.get(family)
    msg = str(err.value)
    assert "\n" not in msg and "names a family of links" in msg and hint in msg, msg


def test_the_fabrics_beyond_infiniband_and_ethernet_project_from_the_command_line(capsys):
    """EFA, Slingshot, Omni-Path and FDR InfiniBand (rows added for published results
    from such clusters), as written, as the link of a two-node projection: a ratio and
    its verdict under the table's name."""
    from hvd_vs_ddp.cli import main

    for written, name in (("EFA", "efa-100g"), ("Slingshot 11", "slingshot-11"),
                          ("Omni-Path", "opa-100g"), ("FDR InfiniBand", "ib-fdr")):
        rc = main(["project", "--compute-ms", "50", "--model", "resnet18", "--batch-size",
                   "32", "--devices", "8", "--devices-per-node", "4", "--interconnect",
                   written, "--draws", "20"])
        out = capsys.readouterr().out
        assert rc == 0 and "projected ratio" in out and f"x {name} between" in out, name


def test_a_link_that_only_looks_like_one_is_still_refused():
    for bad in ("warp-drive", "HDR", "7GbE"):
        if bad == "HDR":  # HDR alone is InfiniBand HDR: known
            assert interconnects.get(bad).name == "ib-hdr"
            continue
        with pytest.raises(UnknownName):
            interconnects.get(bad, "inter")


def test_one_node_needs_no_interconnect(capsys):
    """Every size inside one node: no link between nodes to name (before, --interconnect
    was required all the same); the output says one node."""
    from hvd_vs_ddp.cli import main

    assert main(["project", "--compute-ms", "40.8", "--model", "resnet50", "--devices",
                 "1,4", "--devices-per-node", "4", "--intra-node", "nvlink3", "--draws",
                 "40"]) == 0
    out = capsys.readouterr().out
    assert "nvlink3 inside one node" in out and "at 4 devices (1 node)" in out


def test_a_row_with_only_the_needed_columns(tmp_path):
    """A published figure as someone tabulates it: no source, url, scope or library
    settings (today's defaults), the model as the paper writes it."""
    f = tmp_path / "min.csv"
    f.write_text("id,model,batch,devices,per_node,intra,inter,compute_ms,ddp,horovod\n"
                 "a100-2nodes,ResNet-50,32,8,4,NVLink 3,HDR InfiniBand,42.2,5500,4970\n")
    (row,) = validation.judge_file(f)
    assert row.in_scope and abs(row.ratio_published - 4970 / 5500) < 1e-9
    assert row.verdict and row.values[0].projected[0] > 0

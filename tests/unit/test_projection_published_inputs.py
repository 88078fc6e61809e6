"""The projection given what papers and cluster pages publish, as they write it: published
transformers by name, any torchvision classifier as spelt, interconnects as named
('HDR InfiniBand', 'EFA'), files of published rows from a spreadsheet (`validation
--rows`), a one-node target with no interconnect.

    pytest tests/unit/test_projection_published_inputs.py -q
"""
from __future__ import annotations

import re
import warnings

import pytest

from hvd_vs_ddp.common.errors import InputError, UnknownName
from hvd_vs_ddp.projection import against_published as ap
from hvd_vs_ddp.projection import architectures, interconnects, rows_file, validation
from hvd_vs_ddp.projection import published_rows as pr


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
    assert pr._layout("ResNet-50", 4).grad_bytes == model_layout("resnet50", 4).grad_bytes
    assert len(pr._layout("bert-large", 4).grads) == 398


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


@pytest.mark.parametrize("column, value, error", [
    ("optimizer", "sgd", "line 2: optimizer 'sgd' is not one of loop, foreach"),
    ("unpinned", "yes", "line 2: unpinned 'yes' is not one of ddp, horovod, both, none"),
    ("controller", "nccl", "line 2: controller 'nccl' is not one of mpi, gloo"),
    ("nccl_avg", "true", "line 2: nccl_avg 'true' is not one of yes, no"),
    ("ready_wait", "host", "line 2: ready_wait 'host' is not one of gpu, cpu"),
    ("algorithm", "bruck", "line 2: algorithm 'bruck' is not one of auto, ring, tree")])
def test_a_rows_setting_it_cannot_read_is_one_line_not_a_default(tmp_path, column, value,
                                                                 error):
    """A study's setting the model reads (optimizer, pinning, controller...) that it does
    not know is an error naming it, not silently today's default."""
    f = tmp_path / "rows.csv"
    f.write_text(f"{HEADER},{column}\n{MAHTI},{value}\n")
    with pytest.raises(rows_file.RowsError, match=re.escape(error)):
        rows_file.read(f)


def test_a_rows_settings_and_library_are_read_in_any_case(tmp_path):
    """'DDP', 'Foreach', 'Horovod' and 'both' as people write them: read as the model's
    names (a library of 'DDP' was projected as Horovod: anything but "ddp" was)."""
    f = tmp_path / "rows.csv"
    f.write_text(f"{HEADER},optimizer,unpinned\n{MAHTI},Foreach,Horovod\n"
                 f"{MAHTI},LOOP,both\n{MAHTI},,None\n")
    got = [(r["optimizer"], r["unpinned"]) for r in rows_file.read(f)]
    assert got == [("foreach", "horovod"), ("loop", "ddp horovod"), ("", "")]
    header, *rows = pr.DATA.read_text().splitlines()
    ddp = next(r for r in rows if r.split(",")[1] == "ddp")
    one = tmp_path / "one.csv"
    one.write_text(header + "\n" + "new-" + ddp.replace(",ddp,", ",DDP,", 1) + "\n")
    (row,) = rows_file.read(one)
    assert row["library"] == "ddp"
    (judged,) = ap.judge_file(one, draws=40)
    assert [v.library for v in judged.values] == ["ddp"]
    bad = tmp_path / "bad.csv"
    bad.write_text(header + "\n" + "new-" + ddp.replace(",ddp,", ",pytorch,", 1) + "\n")
    with pytest.raises(rows_file.RowsError, match="library 'pytorch' is not one of ddp"):
        rows_file.read(bad)


def test_rows_of_one_library_say_none_for_the_other(tmp_path, capsys):
    """`validation --rows FILE` with one library's rows (published.csv's columns): the
    other library's error is "none (no value)", not a median of nothing ("nan%", numpy's
    warning)."""
    header, *rows = pr.DATA.read_text().splitlines()
    ddp = next(r for r in rows if r.split(",")[1] == "ddp")
    one = tmp_path / "one.csv"
    one.write_text(header + "\n" + "new-" + ddp + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a mean or median of nothing warns
        assert validation.main(["--rows", str(one)]) == 0
    out = capsys.readouterr().out
    assert "Horovod none (no value)" in out and "nan" not in out, out
    s = ap.summary(ap.judge_file(one))
    assert s["median_abs_error"]["horovod"] is None and s["median_abs_error"]["ddp"] >= 0


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
    header, *rows = pr.H2H.read_text().splitlines()
    mahti = next(r for r in rows if r.startswith("csc-mahti-resnet50-8gpu-synthetic-2023"))
    good = tmp_path / "more.csv"
    good.write_text(header + "\n" + ("new-" + mahti).replace(",resnet50,", ",ResNet-50,")
                    + "\n")
    (row,) = ap.judge_file(good)  # default draws: the caches the tests share
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
                   written, "--draws", "40"])
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
    (row,) = ap.judge_file(f)
    assert row.in_scope and abs(row.ratio_published - 4970 / 5500) < 1e-9
    assert row.verdict and row.values[0].projected[0] > 0

"""Published values at 256 devices and more: NVIDIA's PyTorch BERT
scaling table (DDP, 16 to 256 A100s) and its TensorFlow 2 BERT tables (Horovod, 16 to 512
GPUs) beside Horovod's own 512-GPU chart; the half-precision gradients mixed-precision
rows reduce (`grad_dtype`) and the reduction after backward (`reduce_after_backward`).

    pytest tests/unit/test_projection_at_scale_sources.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

from hvd_vs_ddp.projection import against_published as ap
from hvd_vs_ddp.projection import published_rows as pr
from hvd_vs_ddp.projection import rows_file, validation

DLE = "NVIDIA DeepLearningExamples PyTorch BERT README"
TF2 = "NVIDIA DeepLearningExamples TensorFlow2 BERT README"


def test_each_library_has_published_values_at_256_devices_and_what_the_model_reaches():
    """Floors of the goal at scale, leave one source out (docs/projection.md). DDP
    from NVIDIA's PyTorch BERT table: met (2 values at 256 GPUs, 0.6 points each when
    added). Horovod: its docs' 512-GPU chart within 2 points; NVIDIA's TensorFlow 2 BERT
    table within 6 points on DGX A100 at sequence 128 but 17-22 points too high on DGX-2H
    at 256 and 512 GPUs (no term drops 0.95 at 64 GPUs to 0.75 at 256 there): not met,
    median 5.7, worst 21.6 when added."""
    a = ap.at_scale(ap.loso())
    line = validation.scale_line({"at_scale": a})
    assert a["ddp"]["values"] >= 2 and DLE in a["ddp"]["sources"], line
    assert a["ddp"]["median_points"] <= ap.GOAL_SCALE_MEDIAN, line
    assert a["ddp"]["worst_points"] <= ap.GOAL_SCALE_WORST, line
    hvd = {r["id"]: r["points"] for r in a["horovod"]["rows"]}
    assert len(hvd) >= 11 and TF2 in a["horovod"]["sources"], line
    assert all(abs(p) <= 2.5 for i, p in hvd.items() if i.startswith("horovod-")), hvd
    assert all(abs(hvd[f"dle-tf2-dgxa100-bert-large-{p}-256gpu"]) <= 6.5
               for p in ("fp16", "tf32")), hvd
    assert a["horovod"]["median_points"] <= 6.0 and a["horovod"]["worst_points"] <= 23, line


def test_nvidias_bert_rows_are_read_as_the_table_states_them():
    rows = {r["id"]: r for r in pr.rows() if r["source"] == DLE}
    assert len(rows) == 10
    tf2 = {r["id"]: r for r in pr.rows() if r["source"] == TF2}
    assert len(tf2) == 18
    # accumulation 2 at 32 nodes: reduced after backward; accumulation 1: as backward goes
    assert tf2["dle-tf2-dgxa100-bert-large-tf32-256gpu"]["reduce_after_backward"] == "yes"
    assert tf2["dle-tf2-dgxa100-bert-large-fp16-256gpu"]["reduce_after_backward"] == "no"
    assert int(tf2["dle-tf2-dgx2h-bert-large-fp32-512gpu"]["batch"]) == 32 * 4
    big = rows["dle-bert-large-tf32-phase1-256gpu"]
    # 75706 sequences/s on 32 nodes x 8; accumulated batch 8192 / 32 nodes per GPU
    assert float(big["published"]) == pytest.approx(75706 / 256, abs=0.01)
    assert int(big["batch"]) == 256 and big["grad_dtype"] == ""
    # compute: the 1-node TF32 row, 2486 sequences/s on 8 GPUs
    assert float(big["compute_ms"]) == pytest.approx(256 * 8 / 2486 * 1000, abs=0.1)
    assert rows["dle-bert-large-fp16-phase1-256gpu"]["grad_dtype"] == "fp16"
    # DDP's one bucket (bucket_cap_mb = the device's memory in bytes): no overlap
    assert all(float(r["bucket_mb"]) >= 80e3 for r in rows.values())


def test_half_precision_gradients_halve_what_ddp_reduces_and_shorten_its_step():
    """Mutation: `_layout` ignoring its `grad_bytes` (every row reducing fp32) fails here."""
    full, half = pr._layout("bert-large", 256), pr._layout("bert-large", 256, 2)
    assert half.grad_bytes * 2 == full.grad_bytes
    assert [g.ready for g in half.grads] == [g.ready for g in full.grads]
    row = next(r for r in pr.rows() if r["id"] == "dle-bert-large-fp16-phase1-256gpu")
    fp16 = np.median(pr._single(row, 40).values[0].draws)
    fp32 = np.median(pr._single({**row, "grad_dtype": ""}, 40).values[0].draws)
    assert fp16 > fp32 * 1.005  # ~0.67 GB less to reduce across 32 nodes, after backward


def test_a_gradient_type_the_projection_does_not_know_is_one_line(tmp_path):
    f = tmp_path / "rows.csv"
    f.write_text("model,batch,devices,per_node,intra,inter,compute_ms,ddp,horovod,grad_dtype\n"
                 "resnet50,32,8,4,nvlink3,ib-hdr,40.8,5900,5250,int8\n")
    with pytest.raises(rows_file.RowsError,
                       match="line 2: grad_dtype 'int8' is not one of fp32, tf32, fp16, bf16"):
        rows_file.read(f)
    f.write_text("model,batch,devices,per_node,intra,inter,compute_ms,ddp,horovod,grad_dtype\n"
                 "resnet50,32,8,4,nvlink3,ib-hdr,40.8,5900,5250,BF16\n")
    assert rows_file.read(f)[0]["grad_dtype"] == "bf16"
    f.write_text("model,batch,devices,per_node,intra,inter,compute_ms,ddp,horovod,"
                 "reduce_after_backward\nresnet50,32,8,4,nvlink3,ib-hdr,40.8,5900,5250,maybe\n")
    with pytest.raises(rows_file.RowsError,
                       match="line 2: reduce_after_backward 'maybe' is not yes or no"):
        rows_file.read(f)


def test_a_reduction_after_backward_overlaps_nothing_and_costs_horovod_its_whole_time():
    """Mutation: `_layout` ignoring `after` (gradients ready as backward makes them) fails."""
    lay = pr._layout("bert-large", 352, 4, True)
    assert {g.ready for g in lay.grads} == {1.0}
    row = next(r for r in pr.rows() if r["id"] == "dle-tf2-dgxa100-bert-large-tf32-256gpu")
    after = np.median(pr._single(row, 40).values[0].draws)
    during = np.median(pr._single({**row, "reduce_after_backward": "no"}, 40).values[0].draws)
    assert during > after * 1.003

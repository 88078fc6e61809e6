"""Sharded backends' memory accounting, in one process: held_bytes counts local
shards and each tensor once, the throughput record validates the per-rank byte
counts, and the report's memory table shows fractions of DDP's.

    python -m pytest tests/unit/test_sharded_memory.py -q
"""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from hvd_vs_ddp.backends.held_bytes import held_bytes, tensor_bytes
from hvd_vs_ddp.backends.sharded import constructor_kwargs, rebuilt
from hvd_vs_ddp.reports.memory_table import dp_gpu_table, memory_table
from hvd_vs_ddp.results_schema import ResultsError, ThroughputRecord

MiB = 2**20


def test_held_bytes_of_a_plain_model_and_adam():
    model = torch.nn.Linear(256, 256)  # 65,792 float32 parameters
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(4, 256)).sum().backward()
    opt.step()
    held = held_bytes(model, opt)
    assert held["param_bytes"] == 65792 * 4
    assert held["grad_bytes"] == 65792 * 4
    # exp_avg and exp_avg_sq per parameter, plus a scalar step per parameter
    assert held["optim_state_bytes"] == 2 * 65792 * 4 + 2 * opt.state[model.weight]["step"].nbytes


def test_views_count_once_each_and_a_repeat_not_at_all():
    flat = torch.zeros(100)
    a, b = flat[:40], flat[40:]
    assert tensor_bytes([a, b, a, None, torch.empty(0)]) == 400


def test_rebuilt_optimizer_keeps_class_groups_and_hyperparameters():
    old = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))]
    new = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))]
    opt = torch.optim.SGD([{"params": [old[0]], "lr": 0.5}, {"params": [old[1]]}],
                          lr=0.05, momentum=0.9, weight_decay=1e-4)
    again = rebuilt(opt, old, new)
    assert type(again) is torch.optim.SGD
    assert again.param_groups[0]["params"][0] is new[0]
    assert again.param_groups[1]["params"][0] is new[1]
    assert [g["lr"] for g in again.param_groups] == [0.5, 0.05]
    assert again.defaults["momentum"] == 0.9 and again.defaults["weight_decay"] == 1e-4
    assert set(constructor_kwargs(opt)) <= set(opt.defaults)
    with pytest.raises(RuntimeError, match="parameter count"):
        rebuilt(opt, old, new[:1])


def _record(**memory):
    return {"kind": "throughput", "backend": "zero", "world_size": 2,
            "launcher": "torchrun", "workload": "gpt-wide", "knobs": {},
            "per_rank_batch": 4, "global_batch": 8, "step_times": [0.5],
            "samples_per_s": [16.0], "memory": {"max_rss_mb": [1000.0, 1001.0], **memory}}


def test_record_takes_per_rank_bytes_and_refuses_bad_ones():
    rec = ThroughputRecord.from_dict(_record(optim_state_bytes=[10, 12]), "x")
    assert rec.rows()[0]["optim_state_bytes"] == 12
    with pytest.raises(ResultsError, match="optim_state_bytes"):
        ThroughputRecord.from_dict(_record(optim_state_bytes=[-1, 2]), "x")
    with pytest.raises(ResultsError, match="param_bytes"):
        ThroughputRecord.from_dict(_record(param_bytes=[1.5, 2]), "x")


def _row(backend, n, params, grads, state):
    return {"run": "r", "case": "gpt-wide", "backend": backend, "world_size": n,
            "param_bytes": params, "grad_bytes": grads, "optim_state_bytes": state,
            "max_rss_mb": 1000.0, "cuda_max_mb": float("nan")}


def test_memory_table_shows_fractions_of_ddp():
    full = 50 * MiB
    tp = pd.DataFrame([_row("ddp-gloo", 2, full, full, 2 * full),
                       _row("zero", 2, full, full, full),
                       _row("fsdp", 2, full / 2, full / 2, full),
                       _row("horovod", 2, float("nan"), float("nan"), float("nan"))])
    table = memory_table(tp)
    assert table is not None and "Horovod has no sharding" in table.note
    by = table.df.set_index("backend")
    assert "horovod" not in by.index  # no byte counts recorded: not shown
    assert by.loc["zero", "optimizer state / rank"] == "50 MiB (0.50)"
    assert by.loc["fsdp", "params / rank"] == "25 MiB (0.50)"
    assert by.loc["ddp-gloo", "grads / rank"] == "50 MiB (1.00)"
    assert memory_table(tp.assign(param_bytes=float("nan"))) is None


def test_dp_gpu_table_shows_the_first_gpus_extra_load():
    tp = pd.DataFrame([{**_row("dp", 1, 1, 1, 1), "cuda_per_device_mb": [300.0, 100.0, 100.0]},
                       {**_row("single", 1, 1, 1, 1), "cuda_per_device_mb": None}])
    table = dp_gpu_table(tp)
    assert table is not None and list(table.df["backend"]) == ["dp"]
    assert table.df.iloc[0]["GPU 0 / others"] == "3.00"
    assert dp_gpu_table(tp.iloc[1:]) is None


def test_throughput_table_shows_start_up_apart_from_throughput():
    from hvd_vs_ddp.reports.tables import throughput_table
    row = {"run": "r", "case": "mlp", "world_size": 2, "global_batch": 64, "n_steps": 4,
           "step_median": 0.01, "step_q25": 0.01, "step_q75": 0.01, "sps_median": 6400.0,
           "sps_q25": 6000.0, "sps_q75": 6600.0, "max_rss_mb": 700.0,
           "cuda_max_mb": float("nan")}
    tp = pd.DataFrame([{**row, "series": "ddp-gloo via torchrun", "startup_s": 3.5},
                       {**row, "series": "ddp-gloo via spawn", "startup_s": 4.25}])
    df = throughput_table(tp).df.set_index("backend")
    assert df.loc["ddp-gloo via spawn", "start-up (s)"] == "4.25"
    assert "start-up (s)" not in throughput_table(tp.drop(columns="startup_s")).df

"""The presets at GPU sizes (hvd_vs_ddp/cli/gpu_sizes.py): chosen by memory, never on a CPU.

    pytest tests/unit/test_gpu_sizes.py
"""
from __future__ import annotations

from hvd_vs_ddp.cli import gpu_sizes, presets
from hvd_vs_ddp.harness.option_parsing import parse_argv
from hvd_vs_ddp.workloads import registry


def test_a_cpu_machine_keeps_the_presets_sizes():
    quick = presets.preset("quick")
    assert gpu_sizes.apply(quick, 0, 0.0) is quick


def test_a_big_gpu_gets_what_its_users_train_and_every_rank_has_its_batches():
    sized = gpu_sizes.apply(presets.preset("quick"), 1, 141.0, (1, 2))
    params = sized.options.workload_param
    assert "resnet50:image_size=224" in params and "resnet50:batch_size=64" in params
    assert "gpt:seq_len=1024" in params and "gpt:batch_size=16" in params
    for name in ("resnet50", "gpt"):  # each resolves to a workload that can feed 2 ranks
        given = {p.split(":", 1)[1].split("=")[0]: int(p.split("=")[1]) for p in params
                 if p.startswith(name + ":")}
        wl = registry.get(name, **given)
        assert given["samples"] >= wl.batch_size * 2 * gpu_sizes.READY


def test_smaller_gpus_get_smaller_steps_and_given_sizes_win():
    small = gpu_sizes.params_for(16.0, 1)
    assert small["resnet50"]["batch_size"] == 32 and small["gpt"]["seq_len"] == 512
    quick = presets.preset("quick")
    mine = quick.options.replace(workload_param=("resnet50:batch_size=4",))
    import dataclasses
    sized = gpu_sizes.apply(dataclasses.replace(quick, options=mine), 2, 80.0)
    assert [p for p in sized.options.workload_param if p.startswith("resnet50")] == \
        ["resnet50:batch_size=4"]  # the preset's own sizing of a workload is kept
    assert any(p.startswith("gpt:") for p in sized.options.workload_param)
    assert parse_argv(sized.options.to_argv())  # the options still parse

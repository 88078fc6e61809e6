"""The recovery trial's GPUs: its two "hosts" (localhost, 127.0.0.1) are one machine, and
each numbers its local ranks from 0, so without a split every worker would take cuda:0.
Each host gets its own GPUs (Plan.gpu_split in every launcher's environment, read by
backends/placement.py) and a trial with more ranks than GPUs is refused up front.

    python -m pytest -p no:cacheprovider tests/unit/test_placement_recovery.py -q
"""
from __future__ import annotations

import pytest

from hvd_vs_ddp.backends.env import detect
from hvd_vs_ddp.backends.placement import conflicts, place_in
from hvd_vs_ddp.cli import matrix, presets
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.recovery import launch
from hvd_vs_ddp.recovery.plan import HOST_ENV, Plan

TORCHRUN = dict(path="torchrun-elastic", checkpoint="dcp", backend="ddp-nccl",
                world_size=4, global_batch=48)
HOROVOD = dict(path="horovod-elastic", checkpoint="memory", backend="horovod",
               world_size=3, global_batch=48)


def _workers(plan: Plan, gpus: int, tmp_path) -> list:
    """Every worker's placement as its launcher would start it on a `gpus`-GPU machine."""
    out = []
    rank = 0
    if plan.path == "torchrun-elastic":  # one agent per host, each with its environment
        launches = launch.commands(plan, tmp_path, "python", gpus=gpus)
    else:  # one horovodrun (not needed installed here): what commands() gives every launch
        launches = [([], plan.gpu_split(gpus), False)]
    for host, slots in plan.hosts():
        extra = next((e for _, e, _ in launches if e.get(HOST_ENV) == host), launches[0][1])
        for local in range(slots):
            if plan.path == "horovod-elastic":  # horovodrun sets these per worker
                env = {**extra, "HOROVOD_HOSTNAME": host, "HOROVOD_RANK": str(rank),
                       "HOROVOD_SIZE": str(plan.world_size), "HOROVOD_LOCAL_RANK": str(local),
                       "HOROVOD_LOCAL_SIZE": str(slots)}
            else:  # each host's torchrun agent
                env = {**extra, "RANK": str(rank), "WORLD_SIZE": str(plan.world_size),
                       "LOCAL_RANK": str(local), "LOCAL_WORLD_SIZE": str(slots),
                       "TORCHELASTIC_RUN_ID": "r"}
            out.append(place_in(detect(env), env, gpus, nccl=True, host="this-machine"))
            rank += 1
    return out


@pytest.mark.parametrize("fields", [TORCHRUN, HOROVOD], ids=["torchrun", "horovod"])
def test_recovery_workers_take_distinct_gpus(fields, tmp_path):
    placed = _workers(Plan(**fields), gpus=4, tmp_path=tmp_path)
    assert conflicts(placed) is None
    assert sorted(p.ordinal for p in placed) == list(range(fields["world_size"]))


def test_recovery_with_more_ranks_than_gpus_is_refused(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="one GPU per rank needs 4"):
        launch.commands(Plan(**TORCHRUN), tmp_path, "python", gpus=2)
    assert launch.commands(Plan(**TORCHRUN), tmp_path, "python", gpus=0)  # CPU: as before
    monkeypatch.setattr(matrix, "_gpus", lambda: 2)  # the host's GPU count, nothing else
    with pytest.raises(InputError, match="recovery at world size 3: .* 2 GPU"):
        matrix.cells(presets.preset("recovery"), ["horovod"], [2, 3])
    assert [c.world_size for c in matrix.cells(presets.preset("recovery"), ["horovod"],
                                               [2])] == [2]

"""Placement (hvd_vs_ddp/backends/placement.py): the topology table as data, and the rules.

Every row of tests/unit/topology.py is a job (launcher x GPUs per node x visible devices x
ranks per node x nodes): each rank's real launcher variables go through env.detect and the
placement module, and the outcome must be the row's (each rank's host and physical GPU) or
a refusal. On 56a4867, 11 of its 33 rows were wrong (srun --mpi=pmi2, CUDA_VISIBLE_DEVICES
set for all ranks, Gloo/MPI ranks sharing a GPU, horovodrun with no GPU check).

    python -m pytest -p no:cacheprovider tests/unit/test_placement.py -q
"""
from __future__ import annotations

import datetime

import pytest

from hvd_vs_ddp.backends import placement
from hvd_vs_ddp.backends.env import LauncherEnv, detect
from hvd_vs_ddp.backends.placement import Placement, PlacementError
from tests.unit import topology


@pytest.mark.parametrize("row", topology.ROWS, ids=lambda r: r.id)
def test_topology_table_row(row):
    outcome = topology.evaluate(row, *topology.current_rules())
    assert topology.matches(row, outcome), f"{row.id}: got {outcome!r}, want {row.expected!r}"


def test_srun_pmi2_rank_5_of_2_nodes_x_4_is_local_1_of_4_on_node_1():
    """srun --mpi=pmi2 read as srun, not by PMI's detector as one node (5, 8, 0)."""
    row = topology.Row("srun-pmi2", 4, "all", 4, 2, True, "")
    env = detect(topology.launcher_environ(row, 5))
    assert (env.launcher, env.local_rank, env.local_size, env.node_rank) == ("srun", 1, 4, 1)


def test_mpirun_and_mpiexec_inside_slurm_are_not_srun():
    """The daemons' srun step leaves SLURM_PROCID = the node: the MPI launcher's own wins."""
    for launcher, name in (("mpirun-in-slurm", "mpirun"), ("mpiexec-in-slurm", "mpiexec")):
        row = topology.Row(launcher, 4, "all", 4, 2, True, "")
        env = detect(topology.launcher_environ(row, 6))
        assert (env.launcher, env.rank, env.local_rank, env.node_rank) == (name, 6, 2, 1)


def test_visible_devices_follow_cuda_rules():
    assert placement.visible_devices({}, 3) == ("0", "1", "2")
    assert placement.visible_devices({"CUDA_VISIBLE_DEVICES": "2,3"}, 2) == ("2", "3")
    assert placement.visible_devices({"CUDA_VISIBLE_DEVICES": "1,-1,2"}, 8) == ("1",)
    assert placement.visible_devices({"CUDA_VISIBLE_DEVICES": ""}, 0) == ()


def test_plan_places_hosts_in_order_and_refuses_in_one_line():
    ranks = placement.plan([("a", 2), ("b", 2)], 4, gpus_per_host=2, nccl=True)
    assert [(p.host, p.node_rank, p.local_rank, p.gpu) for p in ranks] == \
        [("a", 0, 0, "0"), ("a", 0, 1, "1"), ("b", 1, 0, "0"), ("b", 1, 1, "1")]
    per_task = placement.plan([("a", 4)], 4, 4, "per-task", nccl=True)
    assert [(p.ordinal, p.gpu) for p in per_task] == [(0, "0"), (0, "1"), (0, "2"), (0, "3")]
    with pytest.raises(PlacementError, match="8 ranks on this host but 4 GPU"):
        placement.plan([("a", 8)], 8, 4, nccl=True)
    with pytest.raises(PlacementError, match="would all train on GPU 0"):
        placement.plan([("a", 2)], 2, 2, "0", nccl=False)
    with pytest.raises(PlacementError, match="3 ranks but 2 slot"):
        placement.plan([("a", 2)], 3, 2)
    assert [p.gpu for p in placement.plan([("a", 2)], 2, 0, on_gpu=False)] == [None, None]


def test_agree_refuses_two_ranks_on_one_gpu_through_a_real_store():
    """Inside a rank (started by any launcher): every rank's GPU by UUID, through the job's
    TCPStore; the second rank's entry is written first, as a peer would."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, 1, is_master=True,
                     timeout=datetime.timedelta(seconds=10))
    peer = Placement(1, "h", 0, 1, 2, 0, "GPU-aaaa", True)
    store.set("placement/1", peer.as_json())
    mine = Placement(0, "h", 0, 0, 2, 0, "GPU-aaaa", True)
    with pytest.raises(PlacementError, match=r"ranks 0, 1 on h would all train on GPU "
                                             r"GPU-aaaa: NCCL needs one GPU per rank"):
        placement.agree(store, mine, 2, timeout_s=10)
    store.set("placement/1", Placement(1, "h", 0, 1, 2, 0, "GPU-bbbb", True).as_json())
    assert [p.gpu for p in placement.agree(store, mine, 2, 10)] == ["GPU-aaaa", "GPU-bbbb"]
    # the same GPU name on two hosts is two GPUs
    store.set("placement/1", Placement(1, "other", 1, 0, 1, 0, "0", True).as_json())
    placement.agree(store, Placement(0, "h", 0, 0, 1, 0, "0", True), 2, 10)


def test_gpus_fit_refuses_slurm_showing_all_gpus_to_8_tasks_on_4():
    """CUDA_VISIBLE_DEVICES set (srun --gpus-per-node=4): 8 tasks on its 4 GPUs refused."""
    from hvd_vs_ddp.backends.ddp import gpus_fit

    slurm = {"SLURM_STEP_GPUS": "0,1,2,3"}
    assert not gpus_fit(8, 4, "0,1,2,3", slurm)
    assert gpus_fit(4, 4, "0,1,2,3", slurm)
    assert gpus_fit(8, 1, "3", {"SLURM_STEP_GPUS": "0,1,2,3,4,5,6,7"})  # --gpus-per-task


def test_a_cpu_rank_is_placed_on_the_cpu():
    env = LauncherEnv("torchrun", 3, 4, 1, 2, 1)
    p = placement.here(env, on_gpu=False)
    assert (p.rank, p.node_rank, p.local_rank, p.local_size, p.ordinal, p.gpu) == \
        (3, 1, 1, 2, None, None)
    assert "cpu" in p.describe()

"""The thread plan on GPU nodes, and Horovod's wait under binding.

The plan leaves room for each rank's DataLoader workers, the pin-memory thread and the
libraries' own threads, not `cores // local ranks` threads each; with per-rank CPU binding
(srun -c 4: each rank sees 4 of the node's cores) Horovod's wait must not switch to
sleep-polling, a penalty DDP does not pay. Core counts are arguments here (the rule, not
this machine's cores).

    python -m pytest -p no:cacheprovider tests/unit/test_placement_threads.py -q
"""
from __future__ import annotations

from hvd_vs_ddp.backends.horovod_wait import oversubscribed
from hvd_vs_ddp.harness import threads


def test_horovod_waits_its_own_way_when_each_rank_has_its_own_cores():
    assert not oversubscribed(8, usable=4, cores=32)   # srun -c 4, 8 tasks on 32 cores
    assert not oversubscribed(2, usable=2, cores=2)    # 2 ranks, 2 cores, unbound
    assert oversubscribed(4, usable=2, cores=2)        # 4 ranks sharing 2 cores
    assert oversubscribed(8, usable=4, cores=16)       # binding that overlaps: shared


def test_the_thread_plan_leaves_cores_to_loader_workers_and_gpu_helpers():
    cpu = threads.decide(4, cores=32, usable=32)
    assert (cpu.per_rank, cpu.reserved) == (8, 0)
    gpu = threads.decide(4, loader_workers=2, on_gpu=True, cores=32, usable=32)
    assert (gpu.per_rank, gpu.reserved) == (5, 3)     # 8 - 2 workers - 1 (pin, NCCL)
    bound = threads.decide(8, loader_workers=1, on_gpu=True, cores=64, usable=4)
    assert bound.per_rank == 2                        # its own 4 cores, less 2
    tight = threads.decide(8, loader_workers=4, on_gpu=True, cores=8, usable=8)
    assert tight.per_rank == 1 and tight.reserved == 1  # at least one thread
    assert threads.decide(2, requested=3, cores=2, usable=2).per_rank == 3


def test_a_knob_sets_loader_workers_are_known():
    assert threads.loader_workers("workers2") == 2
    assert threads.loader_workers("default") == 0
    assert threads.loader_workers("no-such-set") == 0

"""The self-test proves placement.

Its GPU lines cover fsdp/zero over NCCL, one GPU visible per rank, ddp-nccl under
mpirun, DataParallel in bf16, and three refusals that pass only when the job stops with
the placement's one-line refusal. Which refusal a machine shows depends on its GPU count
(one GPU: each rank tells alone; more: the gathered UUIDs tell); the plan is checked here
for both, and the refusal mechanism once for real on the CPU (ddp-nccl without a GPU).

    python -m pytest -p no:cacheprovider tests/unit/test_placement_selftest.py -q
"""
from __future__ import annotations

from hvd_vs_ddp.backends import launchers
from hvd_vs_ddp.cli import selftest
from hvd_vs_ddp.common.availability import Availability

REFUSALS = ("refuse-two-nccl-one-gpu", "refuse-same-gpu-by-uuid", "refuse-gloo-sharing-gpu")


def _facts(gpus: int) -> dict:
    yes = Availability(True)
    return {"gpus": gpus, "torch": "t", "cuda": "c", "horovod": None,
            "avail": {b: yes for b in ("ddp-gloo", "ddp-mpi", "ddp-nccl")},
            "launcher": {n: yes for n in launchers.NAMES}}


def test_a_one_gpu_machine_runs_every_one_gpu_line_and_the_refusals(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    checks = {c.id: c for c in selftest.plan(_facts(1))}
    runs = {i for i, c in checks.items() if not c.skip}
    assert runs >= {"ddp-nccl-1", "fsdp-nccl-1", "zero-nccl-1", "amp-bf16", "nvml",
                    *REFUSALS}
    assert not runs & {"dp-gpus", "dp-bf16", "gpu-per-task", "fsdp-nccl-all"}
    two = checks["refuse-two-nccl-one-gpu"]
    assert two.nprocs == 2 and two.env == {} and "visible to each" in (two.expect or "")
    assert "GPU-" in (checks["refuse-same-gpu-by-uuid"].expect or "")


def test_more_gpus_show_one_gpu_to_two_ranks_and_the_uuids_refuse(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    checks = {c.id: c for c in selftest.plan(_facts(4))}
    two = checks["refuse-two-nccl-one-gpu"]
    assert two.env == {"CUDA_VISIBLE_DEVICES": "7"}
    assert selftest.judge(two, 1, "ddp-nccl: ranks 0, 1 on h would all train on GPU GPU-ab: "
                                  "NCCL needs one GPU per rank").status == "pass"
    assert not checks["dp-bf16"].skip and not checks["gpu-per-task"].skip


def test_a_refusal_check_passes_only_on_the_refusal():
    """For real once (ddp-nccl on a machine without a GPU stops with its one line), then
    the judgement: a clean exit, or another error, fails a refusal check."""
    import torch

    check = selftest.Check("r", "r", args=["train", "--backend", "ddp-nccl"],
                           expect=r"ddp-nccl: no CUDA device visible")
    if not torch.cuda.is_available():  # on a GPU machine the GPU lines above cover it
        assert selftest.run_check(check, 120).status == "pass"
    assert selftest.judge(check, 0, "SELFTEST OK trained").status == "fail"
    other = selftest.judge(check, 1, "RuntimeError: NCCL error: Duplicate GPU detected")
    assert other.status == "fail" and "expected a refusal" in other.detail
    assert selftest.judge(check, 1, "x\nddp-nccl: no CUDA device visible\n").status == "pass"

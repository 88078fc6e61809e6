"""Unit tests of launcher detection: every launcher's variables and the broken cases."""
from __future__ import annotations

import pytest

from hvd_vs_ddp.backends.env import LauncherEnvError, detect


def test_plain_process_is_world_size_one():
    env = detect({})
    assert (env.launcher, env.rank, env.world_size, env.local_rank, env.node_rank) == \
        ("single", 0, 1, 0, 0)


def test_torchrun():
    env = detect({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                  "GROUP_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29400",
                  "TORCHELASTIC_RUN_ID": "x"})
    assert env.launcher == "torchrun"
    assert (env.rank, env.world_size, env.local_rank, env.local_size, env.node_rank) == \
        (3, 4, 1, 2, 1)
    assert (env.master_addr, env.master_port) == ("10.0.0.1", 29400)


def test_horovodrun_gloo():
    env = detect({"HOROVOD_RANK": "2", "HOROVOD_SIZE": "4", "HOROVOD_LOCAL_RANK": "0",
                  "HOROVOD_LOCAL_SIZE": "2", "HOROVOD_CROSS_RANK": "1",
                  "HOROVOD_HOSTNAME": "localhost"})
    assert (env.launcher, env.rank, env.world_size, env.local_rank, env.local_size,
            env.node_rank) == ("horovodrun-gloo", 2, 4, 0, 2, 1)
    assert env.master_addr is None


def test_open_mpi():
    env = detect({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
                  "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
    assert (env.launcher, env.rank, env.world_size, env.local_rank, env.local_size) == \
        ("mpirun", 1, 2, 1, 2)


def test_horovodrun_mpi_is_reported_as_horovodrun_mpi():
    env = detect({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
                  "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
                  "HOROVOD_HOSTNAME": "localhost"})
    assert env.launcher == "horovodrun-mpi" and env.world_size == 2


def test_mpich_and_intel_mpi():
    env = detect({"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1",
                  "MPI_LOCALNRANKS": "4"})
    assert (env.launcher, env.rank, env.world_size, env.local_rank, env.local_size,
            env.node_rank) == ("mpiexec", 5, 8, 1, 4, 1)


def test_slurm_srun():
    env = detect({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
                  "SLURM_NODEID": "1", "SLURM_STEP_ID": "0",
                  "SLURM_STEP_TASKS_PER_NODE": "2(x2)"})
    assert (env.launcher, env.rank, env.world_size, env.local_rank, env.local_size,
            env.node_rank) == ("srun", 3, 4, 1, 2, 1)


def test_slurm_batch_shell_without_srun_is_single():
    env = detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "7"})
    assert env.launcher == "single"


@pytest.mark.parametrize("variables, names", [
    ({"RANK": "2", "WORLD_SIZE": "2"}, ["RANK=2", "WORLD_SIZE=2"]),
    ({"RANK": "0"}, ["WORLD_SIZE"]),
    ({"WORLD_SIZE": "2"}, ["RANK"]),
    ({"RANK": "x", "WORLD_SIZE": "2"}, ["RANK"]),
    ({"RANK": "0", "WORLD_SIZE": "0"}, ["WORLD_SIZE=0"]),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h"}, ["MASTER_PORT"]),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, ["LOCAL_WORLD_SIZE"]),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"},
     ["LOCAL_RANK=2"]),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "3"},
     ["LOCAL_WORLD_SIZE=3", "WORLD_SIZE=2"]),
    ({"HOROVOD_RANK": "4", "HOROVOD_SIZE": "4"}, ["HOROVOD_RANK=4"]),
    ({"HOROVOD_RANK": "1"}, ["HOROVOD_SIZE"]),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "2"}, ["OMPI_COMM_WORLD_RANK=3"]),
    ({"OMPI_COMM_WORLD_SIZE": "2"}, ["OMPI_COMM_WORLD_RANK"]),
    ({"PMI_RANK": "0"}, ["PMI_SIZE"]),
    ({"SLURM_PROCID": "4", "SLURM_NTASKS": "4", "SLURM_STEP_ID": "0"}, ["SLURM_PROCID=4"]),
])
def test_inconsistent_variables_name_the_variables(variables, names):
    with pytest.raises(LauncherEnvError) as exc:
        detect(variables)
    for name in names:
        assert name in str(exc.value)


def test_every_detected_launcher_is_a_row_of_the_launcher_table():
    """One vocabulary: whatever env detection reports, the launcher table knows."""
    from hvd_vs_ddp.backends import launchers
    from hvd_vs_ddp.backends.env import DETECTORS

    cases = [{"RANK": "0", "WORLD_SIZE": "2"}, {"HOROVOD_RANK": "0", "HOROVOD_SIZE": "2"},
             {"RANK": "1", "WORLD_SIZE": "2", "HVD_VS_DDP_SPAWNED": "1"},
             {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"},
             {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
              "HVD_VS_DDP_HOROVODRUN": "1"},
             {"PMI_RANK": "0", "PMI_SIZE": "2"},
             {"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, {}]
    seen = {detect(c).launcher for c in cases}
    assert len(seen) == len(DETECTORS) + 2  # + horovodrun-mpi, + single
    assert seen <= set(launchers.NAMES), seen - set(launchers.NAMES)


def test_spawned_ranks_are_spawn_and_read_torchrun_variables():
    from hvd_vs_ddp.harness.spawn_ranks import rank_env
    env = detect(rank_env(1, 2, 4242))
    assert (env.launcher, env.rank, env.world_size, env.local_rank) == ("spawn", 1, 2, 1)
    assert (env.master_addr, env.master_port) == ("127.0.0.1", 4242)


def test_the_launcher_table_speaks_the_results_formats_vocabulary():
    """The format owns the launcher names a file may hold; the table has a row for each
    and no other (a new launcher is added to the format first)."""
    from hvd_vs_ddp.backends import launchers
    from hvd_vs_ddp.results_schema.launchers import LAUNCHERS

    assert set(launchers.NAMES) == set(LAUNCHERS)


def test_every_backend_class_is_declared_once_in_the_catalog():
    """The registry's classes and the catalog's rows name the same backends, and each
    class reads its declaration instead of restating it."""
    from hvd_vs_ddp.backends import catalog, registry

    assert registry.names() == list(catalog.NAMES)
    for name in registry.names():
        cls = registry.get(name)
        assert cls.capabilities is catalog.get(name)
        assert cls.name == name


def test_ranks_never_inherit_a_pytest_xdist_workers_identity():
    """Started from inside a pytest-xdist worker (a CI job's test session), a rank's pytest
    would see PYTEST_XDIST_WORKER and pytest-benchmark would disable itself: launchers.env()
    leaves those variables out, and only those."""
    from hvd_vs_ddp.backends import launchers
    env = launchers.env({"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2",
                         "PYTEST_XDIST_TESTRUNUID": "abc", "PYTEST_ADDOPTS": "-q",
                         "PATH": "/usr/bin"}, launcher="torchrun")
    assert not [n for n in env if n.startswith("PYTEST_XDIST_")]
    assert env["PYTEST_ADDOPTS"] == "-q" and env["PATH"].endswith("/usr/bin")

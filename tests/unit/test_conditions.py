"""Where the answers hold (hvd_vs_ddp/reports/conditions.py): device, cores per rank, link,
and a GPU run's projection labelled as one.

    pytest tests/unit/test_conditions.py -q
"""
from __future__ import annotations

import json
from types import SimpleNamespace

from hvd_vs_ddp.reports.conditions import where_it_holds


def _run(tmp_path, gpus, sizes, projection=None):
    if projection is not None:
        (tmp_path / "projection.json").write_text(json.dumps(projection))
    cells = [SimpleNamespace(entry=SimpleNamespace(world_size=n, hosts=None)) for n in sizes]
    hw = {"cpu": "AMD EPYC", "cores": 2, "gpus": ["NVIDIA A100-SXM4-40GB"] * gpus}
    return SimpleNamespace(name="r", path=tmp_path, hardware=hw, cores=2, gpus=gpus,
                           cells=cells)


def test_a_cpu_run_says_cores_per_rank_and_the_background_thread(tmp_path):
    (line,) = where_it_holds(SimpleNamespace(runs=[_run(tmp_path, 0, [1, 2, 4])]))
    assert "CPU only" in line and "0.5 per rank at 4" in line
    assert "background thread takes a core" in line and "--compute-ms" in line


def test_a_gpu_run_names_its_devices_and_its_projection_labelled(tmp_path):
    doc = {"format": "hvd-vs-ddp/projection", "target": {
        "interconnect": "ib-hdr", "intra_node": "nvlink3", "devices_per_node": 4,
        "nics_per_node": 1}, "workloads": [{"workload": "resnet50", "comparison": [
            {"devices": 64, "text": "ddp is 12% faster than horovod (projected ratio 0.89)"}]}]}
    (line,) = where_it_holds(SimpleNamespace(runs=[_run(tmp_path, 4, [1, 4], doc)]))
    assert "4 GPUs (NVIDIA A100-SXM4-40GB)" in line and "background thread" not in line
    assert "PROJECTION (not measured) for nvlink3 nodes of 4" in line and "12% faster" in line


def test_hosts_reach_only_the_cells_whose_launcher_takes_them(tmp_path):
    """The line reads the run's --hosts (the manifest's, not a per-cell `hosts` no cell
    entry has); torchrun cells run on one host whatever --hosts says."""
    run = _run(tmp_path, 0, [1, 2, 2])
    for cell, launcher in zip(run.cells, ("single", "torchrun", "mpirun")):
        cell.entry.launcher = launcher
    run.manifest = SimpleNamespace(hosts="h1:2,h2:2")
    (line,) = where_it_holds(SimpleNamespace(runs=[run]))
    assert "ranks of the mpirun cells over the hosts h1:2,h2:2; the torchrun cells on one " \
        "host" in line
    run.cells[2].entry.launcher = "torchrun"
    (line,) = where_it_holds(SimpleNamespace(runs=[run]))
    assert "all ranks on one host" in line and "--hosts h1:2,h2:2 reaches no torchrun" in line
    run.manifest = SimpleNamespace(hosts=None)
    (line,) = where_it_holds(SimpleNamespace(runs=[run]))
    assert "all ranks on one host (loopback" in line

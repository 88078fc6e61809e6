"""The link as an axis of the matrix (hvd_vs_ddp/cli/matrix.py `with_links`) and its
options (run --emulate-hosts, --link-rate): which cells cross the emulated hosts, their
ids, what stays on one host, and the one-line refusals before anything starts.

    python -m pytest tests/unit/test_links_matrix.py -q
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from hvd_vs_ddp.cli import matrix, presets
from hvd_vs_ddp.cli.cell import Cell
from tests.launch import ROOT


def test_each_2_rank_throughput_cell_once_per_link_the_rest_on_one_host():
    p = dataclasses.replace(presets.preset("quick"), links=("loopback", "500mbit", "1gbit"))
    cells = matrix.cells(p)
    linked = [c for c in cells if c.link]
    assert linked and all(c.world_size == 2 and c.suites == ("throughput",) for c in linked)
    assert all(c.id.endswith(f"-link{c.link}") for c in linked)
    assert {c.link for c in linked} == {"500mbit", "1gbit"}
    plain = {c.id for c in cells if not c.link}
    for c in linked:  # the loopback cell of each is still there, with its other suites
        assert c.id.removesuffix(f"-link{c.link}") in plain
    assert not any(c.link for c in cells if c.backend in ("single", "compute-only")
                   or "timeline" in c.suites or c.world_size != 2)
    assert {c.launcher for c in linked} <= set(matrix.LINK_LAUNCHERS)


def test_without_loopback_the_untimed_suites_still_run_once():
    p = dataclasses.replace(presets.preset("quick"), links=("1gbit",))
    cells = matrix.cells(p, backends=["ddp-gloo"], world_sizes=[2])
    assert [(c.suites, c.link) for c in cells if c.backend == "ddp-gloo"] == [
        (("throughput",), "1gbit"), (("convergence", "collectives"), None)]


def test_an_autotuned_cell_reads_the_autotune_of_its_own_link():
    p = dataclasses.replace(presets.preset("tune"), links=("loopback", "1gbit"))
    cells = matrix.cells(p)
    ids = {c.id for c in cells}
    tuned = [c for c in cells if c.knob_set == "hvd-autotuned"]
    assert tuned
    for c in tuned:
        source = c.pytest_args[c.pytest_args.index("--horovod-autotuned-from") + 1]
        assert source in ids
        assert source.endswith(f"-link{c.link}") if c.link else "-link" not in source


def test_a_linked_cell_keeps_its_link_through_the_manifest():
    c = Cell("ddp-gloo", "torchrun", 2, ("throughput",), link="1gbit")
    assert c.id == "ddp-gloo-torchrun-np2-link1gbit"
    assert Cell.from_dict(c.as_dict()) == c
    assert "link" not in Cell("ddp-gloo", "torchrun", 2, ("throughput",)).as_dict()


@pytest.mark.parametrize("argv,says", [
    (["--link-rate", "1gbit"], "add --emulate-hosts 2"),
    (["--emulate-hosts", "2"], "name the link's rates"),
    (["--emulate-hosts", "3", "--link-rate", "1gbit"], "2 hosts"),
    (["--emulate-hosts", "2", "--link-rate", "1gb"], "not a link rate"),
    (["--emulate-hosts", "2", "--link-rate", "1gbit,1000mbit"], "named twice"),
    (["--emulate-hosts", "2", "--link-rate", "1gbit", "--hosts", "a:2"], "one or the other"),
])
def test_bad_link_options_are_one_line_before_anything_starts(tmp_path, argv, says):
    out = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "run", *argv,
                          "--runs-dir", str(tmp_path / "runs")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:") and says in lines[0]
    assert not (tmp_path / "runs").exists()


def test_ranks_on_emulated_hosts_share_this_machines_cores_as_on_loopback():
    """Each emulated host sees all of this machine's cores: left to the suites, each of
    2 ranks would run as many intra-op threads as there are cores (measured: resnet50's
    step 10-20x slower, 4 threads on 2 cores); a linked cell's ranks get the machine's
    cores // its ranks, as its loopback twin's do."""
    from hvd_vs_ddp.cli import cell_command
    from hvd_vs_ddp.common.cores import node_cores

    p = presets.preset("links")
    linked = Cell("ddp-gloo", "torchrun", 2, ("throughput",), link="1gbit")
    assert cell_command.cell_options(linked, p).threads == max(1, node_cores() // 2)
    assert cell_command.cell_options(dataclasses.replace(linked, link=None), p).threads == 0

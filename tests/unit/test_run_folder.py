"""The run folder has one owner (hvd_vs_ddp/common/run_folder.py): its paths, and the
output gate as the run that owns the folder. Cheap: temporary folders, no process.

    python -m pytest tests/unit/test_run_folder.py -q
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from hvd_vs_ddp.common import output_formats, outputs
from hvd_vs_ddp.common.run_folder import RunFolder, check_output, write_output

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("count_layout",
                                               ROOT / "scripts" / "count_layout.py")
count_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(count_layout)
# The owner: the names (run_layout.py) and the type (run_folder.py).
OWNERS = {"hvd_vs_ddp/common/run_layout.py", "hvd_vs_ddp/common/run_folder.py"}


def test_only_the_owner_names_the_run_folders_layout():
    named = {}
    for path in count_layout.files(ROOT):
        rel = path.relative_to(ROOT).as_posix()
        hits = count_layout.layout_names(ast.parse(path.read_text()))
        if hits and rel not in OWNERS:
            named[rel] = hits
    assert not named, f"ask a RunFolder (hvd_vs_ddp/common/run_folder.py) instead: {named}"


def test_every_path_lies_in_the_run(tmp_path):
    run = RunFolder(tmp_path / "r")
    paths = [run.manifest, run.cells, run.logs, run.projection, run.results("a.r2"),
             run.log("a.r2"), run.plan("a.r2"), run.compile_cache("a"), run.damaged("2026")]
    assert all(p.is_relative_to(run.root) for p in paths)
    assert len(set(paths)) == len(paths)
    assert RunFolder.of_results(run.results("a")) == RunFolder(run.root.resolve())
    assert run.file("cells/a.json") == run.results("a").resolve()
    assert run.file("../x") is None and run.file("/etc/passwd") is None


def test_make_and_unmake_leave_nothing_of_a_fresh_run(tmp_path):
    run = RunFolder(tmp_path / "r")
    assert run.make() is True and run.cells.is_dir() and run.logs.is_dir()
    assert run.make() is False
    run.unmake()
    assert not run.root.exists()


def test_the_gate_lets_a_run_write_only_its_own_files(tmp_path):
    run, other = RunFolder(tmp_path / "r"), RunFolder(tmp_path / "s")
    run.make()
    run.write_json(run.manifest, output_formats.RUN_MANIFEST,
                   {"format": output_formats.RUN_MANIFEST})
    assert run.is_run() and RunFolder.enclosing(run.results("a")) == RunFolder(run.root)
    run.check((run.results("a"), output_formats.CELL_RESULTS),
              (run.log("a"), output_formats.CELL_LOG))
    check_output(run.results("a"), output_formats.CELL_RESULTS, run.root)  # a rank of this run
    with pytest.raises(outputs.OutputRefused):  # another run's writer
        other.check((run.results("a"), output_formats.CELL_RESULTS))
    with pytest.raises(outputs.OutputRefused):  # a rank not given --run-dir
        check_output(run.results("a"), output_formats.CELL_RESULTS, None)
    with pytest.raises(outputs.OutputRefused):  # a log is not a cell's results
        run.check((run.log("a"), output_formats.CELL_RESULTS))
    with pytest.raises(outputs.OutputRefused):
        write_output(run.manifest, output_formats.RECOVERY_TRIAL, {}, run.root)

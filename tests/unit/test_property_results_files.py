"""Property: whatever happens to a recorded run's files, `hvd-vs-ddp report` never shows a
traceback. It ends in exit 2 with one line "hvd-vs-ddp: error: ..." and nothing
written (the manifest cannot be used), or in a valid report: exit 0, or exit 3 with
the damaged cells listed as unreadable (one warning line each). The run directory is
never changed.

Hypothesis mutates copies of real recorded runs (tests/fixtures/runs/cpu-small, format
version 1, cut to two cells, and to one for the whole report, which then renders in
about a second; cpu-repeats, version 2, two cells of two repetitions each):
truncation at any byte, any JSON node replaced by a wrong type, NaN, +-inf, a huge or
tiny number, unicode or an empty container, a key deleted, an unknown key added, a
format version changed, bytes that are not UTF-8, in manifest.json and in
cells/*.json. The whole report (`cli.main`, in process) runs for a fixed budget of
examples; the loading and tabulating stages run for many more; two fixed mutations
go through the real command.

    python -m pytest tests/unit/test_property_results_files.py -q
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.reports.answer import verdicts_doc
from hvd_vs_ddp.reports.compare import add_scaling
from hvd_vs_ddp.reports.errors import ReportError
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp
from tests.bad_inputs import tree_hash
from tests.launch import ROOT

SMALL = ROOT / "tests" / "fixtures" / "runs" / "cpu-small"
KEEP = ("ddp-gloo-torchrun-np2", "horovod-horovodrun-gloo-np2")  # every kind but compute
FAST = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
FULL = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def _mini_run(dest: Path, keep: tuple[str, ...] = KEEP) -> Path:
    shutil.copytree(SMALL, dest)
    man = json.loads((dest / "manifest.json").read_text())
    man["cells"] = [c for c in man["cells"] if c["id"] in keep]
    (dest / "manifest.json").write_text(json.dumps(man, indent=1))
    for f in (dest / "cells").glob("*.json"):
        if f.stem not in keep:
            f.unlink()
    return dest


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return _mini_run(tmp_path_factory.mktemp("pristine") / "run")


REPEATS = ROOT / "tests" / "fixtures" / "runs" / "cpu-repeats"
KEEP_V2 = ("ddp-gloo-single-np1", "horovod-single-np1")


@pytest.fixture(scope="module")
def pristine_v2(tmp_path_factory) -> Path:
    """A format-version-2 run with repetitions: two cells of cpu-repeats, 2 repetitions."""
    dest = tmp_path_factory.mktemp("pristine-v2") / "run"
    (dest / "cells").mkdir(parents=True)
    man = json.loads((REPEATS / "manifest.json").read_text())
    man["cells"] = [c for c in man["cells"] if c["id"] in KEEP_V2]
    man["repeat"] = 2
    man["order"] = [o for o in man["order"] if o.rsplit(".r", 1)[0] in KEEP_V2
                    and int(o.rsplit(".r", 1)[1]) <= 2]
    for c in man["cells"]:
        c["repeats"] = c["repeats"][:2]
        for r in c["repeats"]:
            shutil.copy(REPEATS / r["results"], dest / r["results"])
    (dest / "manifest.json").write_text(json.dumps(man, indent=1))
    return dest


@pytest.fixture(scope="module")
def one_cell(tmp_path_factory) -> Path:
    """One cell (its figures draw in about a second): for the whole report."""
    return _mini_run(tmp_path_factory.mktemp("one") / "run", KEEP[:1])


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.sampled_from([math.nan, math.inf, -math.inf, 1e308,
                                               -1e308, 5e-324, -0.0, 0, -1, 2**63, 10**40]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.just([]), st.just({}), st.lists(st.floats(allow_nan=True), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _nodes(doc: Any, path: tuple = ()) -> list[tuple]:
    """Paths of every node of a JSON document (the root is ())."""
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _nodes(v, path + (i,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


HOWS = ["truncate", "replace", "replace", "delete", "add", "version", "numbers", "bytes"]


def mutation(data, files: list[str]) -> tuple[str, str, Any]:
    """(file, how, data): one damage to one file of the run, drawn from data."""
    return (data.draw(st.sampled_from(files), label="file"),
            data.draw(st.sampled_from(HOWS), label="how"), data)


def apply(run: Path, name: str, how: str, data) -> str:
    """Damage run/name in place; returns a description for failure messages."""
    path = run / name
    raw = path.read_bytes()
    if how == "truncate":
        cut = data.draw(st.integers(0, len(raw) - 1), label="cut at")
        path.write_bytes(raw[:cut])
        return f"{name} truncated at {cut}"
    if how == "bytes":
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        junk = data.draw(st.binary(min_size=1, max_size=4), label="bytes")
        path.write_bytes(raw[:at] + junk + raw[at + len(junk):])
        return f"{name} bytes {junk!r} at {at}"
    doc = json.loads(raw)
    nodes = _nodes(doc)
    if how == "version":
        value = data.draw(st.sampled_from([0, 2, 3, 99, -1, "2", None, 2.0, True]), label="v")
        target = doc if name == "manifest.json" else doc["machine_info"]["hvd_vs_ddp"]
        target["format_version"] = value
        what = f"format_version = {value!r}"
    elif how == "numbers":  # every number under one node: NaN, inf or huge
        at = data.draw(st.sampled_from(nodes), label="under")
        value = data.draw(st.sampled_from([math.nan, math.inf, 1e308, -1e308, 10**30]))

        def each(d):
            if isinstance(d, dict):
                return {k: each(v) for k, v in d.items()}
            if isinstance(d, list):
                return [each(v) for v in d]
            return value if isinstance(d, (int, float)) and not isinstance(d, bool) else d
        if at == ():
            doc = each(doc)
        else:
            _parent(doc, at)[at[-1]] = each(_parent(doc, at)[at[-1]])
        what = f"numbers under {at} = {value!r}"
    else:  # often a node near the top (few of the thousands of nodes are)
        depth = data.draw(st.sampled_from([1, 2, 3, 4, None]), label="depth")
        at = data.draw(st.sampled_from([n for n in nodes[1:] if depth is None or
                                        len(n) <= depth]), label="node")
        parent = _parent(doc, at)
        if how == "replace":
            value = data.draw(ODD_VALUES, label="value")
            parent[at[-1]] = value
            what = f"{at} = {value!r}"
        elif how == "delete":
            del parent[at[-1]]
            what = f"deleted {at}"
        else:  # add an unknown key to the nearest object
            obj = parent if isinstance(parent, dict) else doc
            key = data.draw(st.text(min_size=1, max_size=8), label="key")
            obj[key] = data.draw(ODD_VALUES, label="value")
            what = f"added {key!r} near {at}"
    path.write_text(json.dumps(doc, indent=1))  # NaN/Infinity written as JSON5-ish tokens
    return f"{name}: {what}"


def _strict_json(text: str) -> Any:
    def refuse(token):
        raise AssertionError(f"verdicts.json holds {token}, which is not JSON")
    return json.loads(text, parse_constant=refuse)


FILES = ["manifest.json"] + [f"cells/{k}.json" for k in KEEP]


@FAST
@given(st.data())
def test_loading_a_damaged_run_is_a_run_or_one_line(pristine, pristine_v2, tmp_path_factory,
                                                    data):
    run = tmp_path_factory.mktemp("m") / "run"
    v2 = data.draw(st.booleans(), label="version 2 with repetitions")
    shutil.copytree(pristine_v2 if v2 else pristine, run)
    files = ["manifest.json"] + sorted(f"cells/{p.name}" for p in (run / "cells").iterdir())
    apply(run, *mutation(data, files))
    try:
        loaded = load_run(run)
    except ReportError as err:
        assert "\n" not in str(err) and str(err)
        event("refused")
        return
    event(f"{len(loaded.unreadable)} unreadable")
    for cell in loaded.unreadable:
        assert "\n" not in cell.unreadable and cell.id in KEEP + KEEP_V2
    data = build_frames([loaded])  # the tabulating stages must cope with what loaded
    cmp = hvd_vs_ddp(add_scaling(data.throughput))
    _strict_json(json.dumps(verdicts_doc(data, cmp, 0.05)))


@FULL
@given(st.data())
def test_report_of_a_damaged_run_is_a_report_or_one_line(one_cell, tmp_path_factory, capsys,
                                                          data):
    root = tmp_path_factory.mktemp("r")
    run = root / "run"
    shutil.copytree(one_cell, run)
    what = apply(run, *mutation(data, FILES[:2]))
    before = tree_hash(run)
    capsys.readouterr()
    out = root / "out" / "report.html"
    code = cli(["report", str(run), "-o", str(out)])  # any exception fails the test
    stdout, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert tree_hash(run) == before, what
    event(f"exit {code}")
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), (what, err)
        assert not (root / "out").exists(), what
        return
    assert code in (0, 3), (what, code, err)
    assert all(ln.startswith("hvd-vs-ddp: warning: unreadable") for ln in lines), (what, err)
    assert (code == 3) == bool(lines), (what, err)
    vj = _strict_json((root / "out" / "verdicts.json").read_text())
    assert len(vj["unreadable"]) == len(lines), what
    assert out.read_text().rstrip().endswith("</html>")
    assert out.with_suffix(".md").read_text().startswith("# ")


@pytest.mark.parametrize("value", [[1], "abc", 5, None])
def test_machine_info_of_another_shape_is_an_unreadable_cell(pristine, tmp_path, value):
    run = tmp_path / "run"
    shutil.copytree(pristine, run)
    path = run / "cells" / f"{KEEP[0]}.json"
    doc = json.loads(path.read_text())
    doc["machine_info"] = value
    path.write_text(json.dumps(doc))
    [cell] = load_run(run).unreadable
    assert f"{path}: pytest-benchmark JSON without machine_info.hvd_vs_ddp" in cell.unreadable


@pytest.mark.parametrize("damage, code", [
    (lambda run: (run / "manifest.json").write_text('{"format": "hvd-vs-ddp/run", "cel'), 2),
    (lambda run: (run / "cells" / f"{KEEP[0]}.json").write_text(
        (run / "cells" / f"{KEEP[0]}.json").read_text().replace('"step_times": [',
                                                                 '"step_times": [NaN, ')), 3),
])
def test_through_the_real_command(one_cell, tmp_path, damage, code):
    run = tmp_path / "run"
    shutil.copytree(one_cell, run)
    damage(run)
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "report", str(run), "-o",
                           str(tmp_path / "out" / "report.html")], capture_output=True,
                          text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == code and len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("hvd-vs-ddp: error:" if code == 2 else "hvd-vs-ddp: warning:")

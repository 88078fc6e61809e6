"""A run's files are checked, never trusted: the one verifier, resume and report.

Recorded runs (tests/fixtures/runs) are copied to tmp and stamped with the digests a run
records today (`integrity.record`, the function the runner calls after every repetition).
Then files are damaged: truncated, corrupted, deleted, swapped, grown, replaced by a
folder, the manifest too. Hypothesis draws the damage; for each draw:

- the report's loader (run_model/load.py) never crashes (a run it cannot use at all is one
  ResultsError line), never calls a cell with a damaged file "passed" (it is
  "unreadable", its note naming the file), and changes nothing on disk;
- resume's check (cli/resume_check.py `repair`, the step the runner takes before it
  runs anything) marks exactly the damaged repetitions "pending" with one line each,
  moves only damaged files aside (kept under damaged/), and leaves every other file
  byte for byte where it was; afterwards nothing still "passed" has damage.

Runs recorded before digests load with a note and are checked by reading.

    python -m pytest tests/unit/test_run_integrity.py -q
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.cli import resume_check
from hvd_vs_ddp.results_schema import (
    FORMAT,
    ResultsError,
    integrity,
    load_manifest,
    write_json_atomic,
)
from hvd_vs_ddp.run_model.load import load_run
from tests.launch import ROOT

RUNS = ROOT / "tests" / "fixtures" / "runs"
STAMPED = ("cpu-small", "cpu-why", "cpu-repeats")  # results, timelines, repetitions
PROPS = settings(max_examples=60, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


def stamp(run: Path) -> Path:
    """Record every passed repetition's files with their digests, as the runner does."""
    man, _ = load_manifest(run)
    stems = integrity.stems(man)
    for cell in man.cells:
        runs = integrity.runs_of(cell)
        for r in runs:
            if r.status == "passed":
                stem = cell.id if len(runs) == 1 else f"{cell.id}.r{r.rep}"
                r.files = integrity.record(run, stem, stems)
    man.digest = man.content_digest()  # as Runner.save sets it
    write_json_atomic(run / "manifest.json", man.to_dict(), kind=FORMAT, owner=run)
    return run


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stamped")
    return {name: stamp(Path(shutil.copytree(RUNS / name, root / name))) for name in STAMPED}


def copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    return Path(shutil.copytree(src, dst))


def files_of(run: Path) -> list[str]:
    return sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())


def snapshot(run: Path) -> dict[str, bytes]:
    return {rel: (run / rel).read_bytes() for rel in files_of(run)}


def recorded(run: Path) -> dict[tuple[str, int], dict[str, dict]]:
    """(cell, rep) -> the files its manifest records (of an undamaged run)."""
    man, _ = load_manifest(run)
    return {(c.id, getattr(r, "rep", 1)): dict(r.files or {})
            for c in man.cells for r in integrity.runs_of(c) if r.status == "passed"}


# -- the verifier, one case at a time ----------------------------------------
def test_a_stamped_run_is_as_written_and_every_file_is_recorded(pristine):
    for name, run in pristine.items():
        man, _ = load_manifest(run)
        assert integrity.check_run(run, man) == {}, name
        assert not integrity.legacy(man)
        vouched = {rel for files in recorded(run).values() for rel in files}
        passed_files = {rel for rel in files_of(run) if rel != "manifest.json"}
        failed = {rel for c in man.cells if c.status != "passed"
                  for rel in (f"logs/{c.id}.log",)}
        assert passed_files - vouched <= failed, name
    why = recorded(pristine["cpu-why"])
    assert any(rel.endswith(".horovod-timeline.json") for f in why.values() for rel in f)


@pytest.mark.parametrize("damage, words", [
    (lambda p: p.write_bytes(p.read_bytes()[:100]), "truncated (100 of"),
    (lambda p: p.write_bytes(p.read_bytes() + b" "), "larger than written"),
    (lambda p: p.write_bytes(p.read_bytes().replace(b"1", b"2", 1)), "other sha256"),
    (lambda p: p.unlink(), "missing (written with"),
    (lambda p: (p.unlink(), p.mkdir()), "not a file any more"),
])
def test_each_damage_is_one_line_naming_the_file(pristine, tmp_path, damage, words):
    run = copy(pristine["cpu-small"], tmp_path / "run")
    target = run / "cells" / "ddp-gloo-torchrun-np2.json"
    damage(target)
    man, _ = load_manifest(run)
    found = integrity.check_run(run, man)
    assert list(found) == [("ddp-gloo-torchrun-np2", 1)]
    [d] = found[("ddp-gloo-torchrun-np2", 1)]
    assert d.path == "cells/ddp-gloo-torchrun-np2.json" and words in d.why
    assert "\n" not in d.line()
    cell = next(c for c in load_run(run).cells if c.id == "ddp-gloo-torchrun-np2")
    assert cell.status == "unreadable" and "cells/ddp-gloo-torchrun-np2.json" in cell.error
    assert words in cell.error


def test_a_damaged_log_or_timeline_leaves_its_cell_out_too(pristine, tmp_path):
    run = copy(pristine["cpu-why"], tmp_path / "run")
    tl = next((run / "cells").glob("*.horovod-timeline.json"))
    tl.write_bytes(tl.read_bytes()[:-10])
    log = run / "logs" / "ddp-gloo-torchrun-np2.log"
    log.write_text("edited\n")
    bad = {c.id: c.error for c in load_run(run).cells if c.status == "unreadable"}
    assert set(bad) == {tl.name.removesuffix(".horovod-timeline.json"), "ddp-gloo-torchrun-np2"}
    assert f"cells/{tl.name}: truncated" in " ".join(bad.values())
    assert "logs/ddp-gloo-torchrun-np2.log" in bad["ddp-gloo-torchrun-np2"]


def test_a_record_outside_the_run_is_damage_and_never_read(pristine, tmp_path):
    run = copy(pristine["cpu-small"], tmp_path / "run")
    doc = json.loads((run / "manifest.json").read_text())
    cell = next(c for c in doc["cells"] if c["id"] == "single-single-np1")
    (cell.get("repeats") or [cell])[0]["files"]["../../outside.json"] = {
        "size": 1, "sha256": "0" * 64}
    (run / "manifest.json").write_text(json.dumps(doc))
    man, _ = load_manifest(run)
    [d] = integrity.check_run(run, man)[("single-single-np1", 1)]
    assert d.path == "../../outside.json" and "outside the run directory" in d.why


def test_an_edited_manifest_says_so_and_is_still_checked(pristine, tmp_path):
    run = copy(pristine["cpu-small"], tmp_path / "run")
    assert not load_manifest(run)[0].edited()
    doc = json.loads((run / "manifest.json").read_text())
    _cell_of(doc, "single-single-np1")["seconds"] = 99.0
    (run / "manifest.json").write_text(json.dumps(doc))
    man, notes = load_manifest(run)
    assert man.edited() and any("edited since the run wrote it" in n for n in notes)
    assert any("edited since the run wrote it" in n for n in load_run(run).notes)
    assert integrity.check_run(run, man) == {}


def _cell_of(doc: dict, cid: str) -> dict:
    c = next(c for c in doc["cells"] if c["id"] == cid)
    return (c.get("repeats") or [c])[0]


def test_a_malformed_record_refuses_the_manifest_in_one_line(pristine, tmp_path):
    run = copy(pristine["cpu-small"], tmp_path / "run")
    doc = json.loads((run / "manifest.json").read_text())
    cell = next(c for c in doc["cells"] if c["status"] == "passed")
    files = (cell.get("repeats") or [cell])[0]["files"]
    files[next(iter(files))]["sha256"] = "xyz"
    (run / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as err:
        load_manifest(run)
    assert "files" in str(err.value) and "sha256" in str(err.value)
    assert "\n" not in str(err.value)


# -- runs recorded before digests ---------------------------------------------------
def test_a_run_recorded_before_digests_loads_with_a_note_and_is_checked_by_reading(tmp_path):
    run = copy(RUNS / "cpu-small", tmp_path / "run")
    loaded = load_run(run)
    assert not loaded.unreadable
    assert any("recorded before hvd-vs-ddp kept digests" in n for n in loaded.notes)
    a, b = run / "cells" / "ddp-gloo-torchrun-np2.json", run / "cells" / "ddp-gloo-single-np1.json"
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    a.write_bytes(b_bytes)
    b.write_bytes(a_bytes)  # swapped: each holds the other cell's results
    c = run / "cells" / "horovod-horovodrun-gloo-np2.json"
    c.write_bytes(c.read_bytes()[:500])
    bad = {x.id: x.error for x in load_run(run).unreadable}
    assert "another cell's file" in bad["ddp-gloo-torchrun-np2"]
    assert "another cell's file" in bad["ddp-gloo-single-np1"]
    assert "truncated JSON" in bad["horovod-horovodrun-gloo-np2"]
    man, _ = load_manifest(run)
    lines = resume_check.repair(run, man)
    assert len(lines) == 3 and all("re-running" in ln for ln in lines)
    # moved aside, so that the re-run's output gate does not refuse to replace them
    moved = sorted(p.name for p in (run / resume_check.DAMAGED).rglob("*.json"))
    assert moved == sorted([a.name, b.name, c.name])
    assert not a.exists() and not b.exists() and not c.exists()


def test_a_folder_where_a_results_file_was_is_moved_aside(pristine, tmp_path):
    run = copy(pristine["cpu-small"], tmp_path / "run")
    target = run / "cells" / "ddp-gloo-torchrun-np2.json"
    target.unlink()
    target.mkdir()
    man, _ = load_manifest(run)
    [line] = resume_check.repair(run, man)
    assert "is not a file any more" in line and not target.exists()


def test_a_results_file_of_another_run_is_caught_by_its_time(tmp_path):
    run = copy(RUNS / "cpu-small", tmp_path / "run")
    src = RUNS / "cpu-why" / "cells" / "ddp-gloo-torchrun-np2.json"  # same cell, other run
    shutil.copy(src, run / "cells" / "ddp-gloo-torchrun-np2.json")
    [cell] = load_run(run).unreadable
    assert "outside its run" in cell.error and "another run's file" in cell.error


# -- resume's check -------------------------------------------------------------------
def test_resume_reruns_only_the_damaged_repetition_and_keeps_the_damaged_file(pristine,
                                                                                tmp_path):
    run = copy(pristine["cpu-repeats"], tmp_path / "run")
    before = snapshot(run)
    man, _ = load_manifest(run)
    victim = next(r for c in man.cells for r in c.repeats or [] if r.status == "passed"
                  and r.rep == 2)
    target = run / victim.results
    target.write_bytes(target.read_bytes()[:64])
    lines = resume_check.repair(run, man)
    assert len(lines) == 1
    assert lines[0].startswith(f"{victim.results}: truncated (64 of") and "re-running" in lines[0]
    assert victim.status == "pending" and victim.files is None
    moved = list((run / resume_check.DAMAGED).rglob(Path(victim.results).name))
    assert len(moved) == 1 and moved[0].read_bytes() == before[victim.results][:64]
    after = snapshot(run)
    for rel, data in before.items():
        if rel not in (victim.results, "manifest.json"):
            assert after[rel] == data, rel
    assert integrity.check_run(run, man) == {}


# -- the property -------------------------------------------------------------------
KINDS = ("truncate", "corrupt", "delete", "swap", "append", "empty", "folder", "record")


@st.composite
def damages(draw):
    name = draw(st.sampled_from(STAMPED))
    n = draw(st.integers(1, 4))
    ops = []
    for _ in range(n):
        kind = draw(st.sampled_from(KINDS))
        pick = draw(st.sampled_from(("results", "timeline", "log", "manifest", "any")))
        ops.append((kind, pick, draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)),
                    draw(st.integers(0, 255))))
    return name, ops


def _choose(files: list[str], pick: str, seed: int) -> str:
    pools = {"results": [f for f in files if f.startswith("cells/") and
                         f.endswith(".json") and "timeline" not in f],
             "timeline": [f for f in files if f.endswith(".horovod-timeline.json")],
             "log": [f for f in files if f.startswith("logs/")],
             "manifest": [f for f in files if f == "manifest.json"], "any": files}
    pool = pools[pick] or files
    return pool[seed % len(pool)]


def _edit_record(run: Path, a: int, b: int) -> None:
    try:
        doc = json.loads((run / "manifest.json").read_text())
        reps = [r for c in doc["cells"] for r in (c.get("repeats") or [c]) if r.get("files")]
    except (ValueError, OSError, KeyError, TypeError, AttributeError):
        return  # already damaged beyond JSON
    if not reps:
        return
    r = reps[a % len(reps)]
    rel = sorted(r["files"])[b % len(r["files"])]
    if b % 3 == 0:
        r["files"][rel]["size"] += 1
    elif b % 3 == 1:
        r["files"][rel]["sha256"] = "f" * 64
    else:
        r["results"] = reps[(a + 1) % len(reps)]["results"]
    (run / "manifest.json").write_text(json.dumps(doc, indent=1))


def apply(run: Path, ops) -> None:
    for kind, pick, a, b, byte in ops:
        files = files_of(run)
        if not files:
            return
        if kind == "record":  # the manifest edited, still valid: a record or a results path
            _edit_record(run, a, b)
            continue
        rel = _choose(files, pick, a)
        path = run / rel
        data = path.read_bytes()
        if kind == "truncate":
            path.write_bytes(data[:b % max(len(data), 1)])
        elif kind == "corrupt" and data:
            i = b % len(data)
            path.write_bytes(data[:i] + bytes([byte]) + data[i + 1:])
        elif kind == "delete":
            path.unlink()
        elif kind == "swap":
            other = run / files[b % len(files)]
            odata = other.read_bytes()
            other.write_bytes(data)
            path.write_bytes(odata)
        elif kind == "append":
            path.write_bytes(data + bytes([byte]) * (1 + b % 64))
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "folder":
            path.unlink()
            path.mkdir()


@PROPS
@given(damages())
def test_damage_never_passes_never_crashes_never_changes_an_undamaged_file(
        pristine, tmp_path, drawn):
    name, ops = drawn
    src = pristine[name]
    run = copy(src, tmp_path / "run")
    apply(run, ops)
    original = snapshot(src)
    now = snapshot(run)
    damaged = {rel for rel, data in original.items() if now.get(rel) != data}
    records = recorded(src)
    hit = {key for key, files in records.items() if set(files) & damaged}
    event(f"damaged files: {min(len(damaged), 3)}{'+' if len(damaged) > 3 else ''}")

    # report: never crashes, never passes a damaged cell, writes nothing
    try:
        loaded = load_run(run)
    except ResultsError as err:
        assert "\n" not in str(err)
        event("report refused the run in one line")
        assert "manifest.json" in damaged or len(hit) >= 1
    else:
        event("report read the run")
        for cell in loaded.cells:
            mine = {k for k in records if k[0] == cell.id}
            if mine & hit:
                assert cell.status != "passed", (cell.id, damaged)
                if cell.entry.status == "passed":
                    assert cell.status == "unreadable"
                    bad = set().union(*(records[k] for k in mine & hit)) & damaged
                    assert any(rel in cell.error for rel in bad), (cell.error, bad)
    assert snapshot(run) == now

    # resume: marks exactly what is damaged, moves only that, keeps everything else
    try:
        man, _ = load_manifest(run)
    except ResultsError as err:
        assert "\n" not in str(err) and "manifest.json" in damaged
        event("resume refused the manifest in one line")
        return
    lines = resume_check.repair(run, man)
    assert all("\n" not in ln and "re-running" in ln for ln in lines)
    for cell in man.cells:
        for r in integrity.runs_of(cell):
            key = (cell.id, getattr(r, "rep", 1))
            if key in hit:
                assert r.status != "passed", key
    after = snapshot(run)
    moved = {rel.split("/", 2)[2]: data for rel, data in after.items()
             if rel.startswith(resume_check.DAMAGED + "/")}
    for rel, data in original.items():
        if rel in damaged:
            continue
        if rel in after:
            assert after[rel] == data, rel
        else:  # only a manifest whose records were changed can make resume move it
            assert "manifest.json" in damaged and moved.get(rel) == data, rel
    for rel in damaged & set(now):
        if (run / rel).is_file() or rel in moved:
            assert after.get(rel, moved.get(rel)) == now[rel]  # kept, byte for byte
    assert integrity.check_run(run, man) == {}

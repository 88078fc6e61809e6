"""The damage table of issue 50: what `run --resume` and `report` say about a damaged run.

A recorded run (tests/fixtures/runs/cpu-why: results, Horovod timelines, logs) is copied
and stamped with the digests a run records today (the runner's own `integrity.record`);
for each kind of damage a fresh copy is damaged, then

- report: the real `hvd-vs-ddp report RUN -o OUT/report.html` (exit status, and its
  error or "unreadable, left out" warning lines), or with --fast the report's loader
  (run_model/load.py `load_run`: which cells it leaves out and why);
- resume: the check `run --resume` makes before it runs anything
  (hvd_vs_ddp/cli/resume_check.py `repair`, the runner's own call; no ranks launched):
  the lines it prints, or the one line that refuses the manifest;
- untouched: the sha256 of every file the damage did not touch, before the report and
  after the resume's check (moved-aside damaged files are not counted as untouched).

Two rows use the run as recorded before digests (no `files` in its manifest).

    python scripts/damage_table.py            # Markdown table on stdout (about 8 min)
    python scripts/damage_table.py --fast     # the report's loader instead of the CLI
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hvd_vs_ddp.cli import resume_check  # noqa: E402
from hvd_vs_ddp.results_schema import ResultsError, load_manifest  # noqa: E402
from hvd_vs_ddp.run_model.load import load_run  # noqa: E402
from tests.unit.test_run_integrity import stamp  # noqa: E402

RUNS = ROOT / "tests" / "fixtures" / "runs"
SRC = "cpu-why"
R = "cells/ddp-gloo-torchrun-np2.json"
R2 = "cells/ddp-mpi-mpirun-np2.json"
TL = "cells/horovod-horovodrun-gloo-np2-timeline.horovod-timeline.json"
LOG = "logs/compute-only-torchrun-np2.log"
M = "manifest.json"


def _edit(rel: str, fn: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        (run / rel).write_bytes(fn((run / rel).read_bytes()))
    return apply


def _swap(a: str, b: str) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        x, y = (run / a).read_bytes(), (run / b).read_bytes()
        (run / a).write_bytes(y)
        (run / b).write_bytes(x)
    return apply


def _flip(data: bytes, at: float = 0.5) -> bytes:
    i = int(len(data) * at)
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


def _number(data: bytes) -> bytes:
    """A step time changed, the JSON still valid and the size the same."""
    doc = data.decode()
    m = re.search(r'"(median|step_time_median|mean)": \d+\.(\d*[1-9])', doc)
    assert m is not None, "no timing in the results"
    j = m.end() - 1
    return (doc[:j] + str(int(doc[j]) % 9 + 1) + doc[j + 1:]).encode()


def _manifest(fn: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        doc = json.loads((run / M).read_text())
        fn(doc)
        (run / M).write_text(json.dumps(doc, indent=1))
    return apply


def _cell(doc: dict, cid: str) -> dict:
    c = next(c for c in doc["cells"] if c["id"] == cid)
    return (c.get("repeats") or [c])[0]


def _rm(rel: str) -> Callable[[Path], None]:
    return lambda run: (run / rel).unlink()


def _folder(rel: str) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        (run / rel).unlink()
        (run / rel).mkdir()
    return apply


def _link(rel: str, to: str) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        (run / rel).unlink()
        os.symlink(run / to, run / rel)
    return apply


def _other_run(run: Path) -> None:
    shutil.copy(RUNS / "cpu-small" / "cells" / "ddp-gloo-torchrun-np2.json", run / R)


def _sha(doc: dict) -> None:
    f = _cell(doc, "ddp-gloo-torchrun-np2")["files"][R]
    f["sha256"] = ("0" if f["sha256"][0] != "0" else "1") + f["sha256"][1:]


def _size(doc: dict) -> None:
    _cell(doc, "ddp-gloo-torchrun-np2")["files"][R]["size"] += 1


def _pointed(doc: dict) -> None:
    _cell(doc, "ddp-gloo-torchrun-np2")["results"] = R2


def _added(run: Path) -> None:
    (run / "cells" / "stray.json").write_text('{"a": 1}')


# (what, damage, stamped?)
KINDS: list[tuple[str, Callable[[Path], None], bool]] = [
    ("results truncated to half", _edit(R, lambda d: d[:len(d) // 2]), True),
    ("results emptied (0 bytes)", _edit(R, lambda d: b""), True),
    ("results: one byte flipped", _edit(R, _flip), True),
    ("results: a step time edited, valid JSON, same size", _edit(R, _number), True),
    ("results: one byte appended", _edit(R, lambda d: d + b" "), True),
    ("results deleted", _rm(R), True),
    ("results replaced by a folder", _folder(R), True),
    ("results of two cells swapped", _swap(R, R2), True),
    ("results replaced by the same cell's file of another run", _other_run, True),
    ("results replaced by JSON of another tool", _edit(R, lambda d: b'{"a": 1}'), True),
    ("results made a symlink to another cell's file", _link(R, R2), True),
    ("results swapped with a timeline", _swap(R, TL), True),
    ("timeline truncated", _edit(TL, lambda d: d[:len(d) - 100]), True),
    ("timeline: one byte flipped", _edit(TL, lambda d: _flip(d, 0.7)), True),
    ("timeline deleted", _rm(TL), True),
    ("log truncated", _edit(LOG, lambda d: d[:len(d) // 3]), True),
    ("log: a line edited", _edit(LOG, lambda d: d.replace(b"passed", b"PASSED", 1)), True),
    ("log deleted", _rm(LOG), True),
    ("manifest: a recorded sha256 edited", _manifest(_sha), True),
    ("manifest: a recorded size edited", _manifest(_size), True),
    ("manifest: a cell's results pointed at another cell's file", _manifest(_pointed),
     True),
    ("manifest truncated", _edit(M, lambda d: d[:len(d) // 2]), True),
    ("manifest: one byte flipped", _edit(M, lambda d: _flip(d, 0.3)), True),
    ("manifest deleted", _rm(M), True),
    ("manifest swapped with a results file", _swap(M, R), True),
    ("a stray file added to cells/ (no damage)", _added, True),
    ("no damage", lambda run: None, True),
    ("before digests: results truncated", _edit(R, lambda d: d[:len(d) // 2]), False),
    ("before digests: results of two cells swapped", _swap(R, R2), False),
]


def digests(run: Path) -> dict[str, str]:
    return {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file() and not p.is_symlink()}


def report_says(run: Path, out: Path, fast: bool) -> str:
    if fast:
        try:
            loaded = load_run(run)
        except ResultsError as err:
            return f"refused: {str(err).replace(str(run) + '/', '').replace(str(run), 'RUN')}"
        bad = [f"{c.id} unreadable: {c.error.replace(str(run) + '/', '')}"
               for c in loaded.unreadable]
        ok = sum(c.status == "passed" for c in loaded.cells)
        notes = [n.replace(str(run) + "/", "") for n in loaded.notes if "edited since" in n]
        return "; ".join(notes + bad) + f" ({ok} cells passed)" if notes or bad else \
            f"all {ok} cells passed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", "report", str(run), "-o",
                           str(out / "report.html")], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=600)
    lines = [ln.replace(str(run) + "/", "").replace(str(run), "RUN")
             for ln in proc.stderr.splitlines() if "error:" in ln or "warning:" in ln]
    md = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
    if "edited since the run wrote it" in md:
        lines.insert(0, "its notes: manifest.json edited since the run wrote it")
    return f"exit {proc.returncode}" + (": " + " / ".join(lines) if lines else "")


def resume_says(run: Path) -> str:
    try:
        man, _ = load_manifest(run)
    except ResultsError as err:
        return f"refused: {str(err).replace(str(run) + '/', '').replace(str(run), 'RUN')}"
    _, notes = load_manifest(run)
    lines = [n.replace(str(run) + "/", "") for n in notes] + resume_check.repair(run, man)
    return " / ".join(lines) if lines else "nothing to re-run for damage"


def row(what: str, damage: Callable[[Path], None], stamped: bool, work: Path,
        fast: bool) -> str:
    run = work / "run"
    shutil.copytree(RUNS / SRC, run)
    if stamped:
        stamp(run)
    original = digests(run)
    damage(run)
    damaged = digests(run)
    touched = {rel for rel, h in original.items() if damaged.get(rel) != h}
    if (run / R).is_symlink():
        touched.add(R)
    untouched = {rel: h for rel, h in original.items() if rel not in touched}
    rep = report_says(run, work / "out", fast)
    after_report = digests(run)
    res = resume_says(run)
    after = digests(run)
    moved = {rel.split("/", 2)[2]: h for rel, h in after.items()
             if rel.startswith(resume_check.DAMAGED + "/")}
    same_report = all(after_report.get(r) == h for r, h in untouched.items())
    kept = {r: after.get(r, moved.get(r)) for r in untouched}  # at its path, or moved aside
    aside = sorted(r for r in untouched if r not in after and moved.get(r) == untouched[r])
    changed = sorted(r for r, h in untouched.items() if kept[r] != h)

    def whole(d: dict[str, str | None]) -> str:
        return hashlib.sha256("".join(f"{r}{d.get(r)}" for r in sorted(untouched))
                              .encode()).hexdigest()[:12]
    keep = f"{len(untouched)} files {whole(dict(untouched))} -> {whole(kept)}" + (
        f"; {', '.join(aside)} moved to damaged/ byte for byte (its record was edited)"
        if aside else "") + (f"; CHANGED: {', '.join(changed)}" if changed else "") + (
        "" if same_report else "; CHANGED BY THE REPORT")
    shutil.rmtree(work)
    return f"| {what} | {rep} | {res} | {keep} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="the report's loader, not the CLI")
    a = ap.parse_args()
    print(f"Run: tests/fixtures/runs/{SRC}, copied and stamped with digests per kind. "
          "Resume: the check `run --resume` makes before running anything. Untouched: "
          "the files the damage did not touch, a sha256 over their digests before -> "
          "after report and resume.\n")
    print("| damage | report said | resume said | untouched files before -> after |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (what, damage, stamped) in enumerate(KINDS, 1):
            print(row(f"{i}. {what}", damage, stamped, Path(tmp) / str(i), a.fast),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build every recorded run's report with two copies of the code and diff them.

The reports built from tests/fixtures/runs must stay identical in every number when the
report's code is only reorganised (issue 47: sections built from a list). This builds each
fixture's report (each run alone, and two before/after pairs) once with the code in
--before and once with the code in --after (default: this checkout), from the SAME fixture
folders, and compares report.md, verdicts.json, report.html (its figures inline) and the
names of the figures byte for byte.

    git archive aacca53 | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    python scripts/same_reports.py --before /tmp/before            # exit 0: all identical
    python scripts/same_reports.py --before /tmp/before --keep /tmp/rep   # keep the reports
    python scripts/same_reports.py --before /tmp/before --cases cpu-small cpu-tune+cpu-compile

Each side runs in its own interpreter with PYTHONPATH set to its tree (the same Python and
packages). Exit 0 when every report is identical, 1 on a difference (a unified diff of the
first lines that differ is printed), 2 on bad input.
"""
from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
FIXTURES = HERE / "tests" / "fixtures" / "runs"
PAIRS = [("cpu-small", "cpu-repeats"), ("cpu-tune", "cpu-compile")]
COMPARED = ("report.md", "verdicts.json", "report.html")

_BUILD = """
import sys
from pathlib import Path
from hvd_vs_ddp.reports import build_report
out = Path(sys.argv[1])
for case in sys.argv[2:]:
    runs = [Path(p) for p in case.split(",")]
    name = "+".join(p.name for p in runs)
    build_report(runs, out / name / "report.html")
"""


def cases(only: list[str] | None = None) -> list[str]:
    runs = sorted(p for p in FIXTURES.iterdir() if (p / "manifest.json").is_file())
    out = [(p.name, str(p)) for p in runs]
    out += [("+".join(pair), ",".join(str(FIXTURES / n) for n in pair)) for pair in PAIRS]
    return [arg for name, arg in out if not only or name in only]


def build(code: Path, out: Path, only: list[str] | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(code), "MPLBACKEND": "Agg"}
    subprocess.run([sys.executable, "-c", _BUILD, str(out), *cases(only)], cwd=code, env=env,
                   check=True)


def compare(before: Path, after: Path) -> list[str]:
    problems = []
    for case in sorted(p.name for p in before.iterdir()):
        a, b = before / case, after / case
        for name in COMPARED:
            old, new = (a / name).read_text(), (b / name).read_text()
            if old != new:
                diff = difflib.unified_diff(old.splitlines(), new.splitlines(),
                                            f"before/{case}/{name}", f"after/{case}/{name}",
                                            lineterm="", n=1)
                problems.append("\n".join(ln[:160] for ln in list(diff)[:40]))
        figs = [sorted(p.name for p in (d / "report_figures").glob("*.png")) for d in (a, b)]
        if figs[0] != figs[1]:
            problems.append(f"{case}: figures differ: {figs[0]} != {figs[1]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="a tree with the old code")
    ap.add_argument("--after", type=Path, default=HERE, help="the new code (this checkout)")
    ap.add_argument("--keep", type=Path, help="write the reports here (else a temp folder)")
    ap.add_argument("--cases", nargs="+", metavar="NAME",
                    help="only these (a fixture's name, or A+B for a pair); default: all")
    args = ap.parse_args(argv)
    if args.cases and len(cases(args.cases)) != len(args.cases):
        print(f"same_reports: error: --cases {' '.join(args.cases)}: unknown name; the "
              f"fixtures are in {FIXTURES}, the pairs {PAIRS}", file=sys.stderr)
        return 2
    for tree in (args.before, args.after):
        if not (tree / "hvd_vs_ddp" / "reports" / "build.py").is_file():
            print(f"same_reports: error: {tree}: no hvd_vs_ddp/reports/build.py there; give "
                  "a checkout of the project", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        for side, tree in (("before", args.before), ("after", args.after)):
            build(tree.resolve(), root / side, args.cases)
        problems = compare(root / "before", root / "after")
        n = len(list((root / "before").iterdir()))
    for p in problems:
        print(p)
    print(f"{n} reports compared ({', '.join(COMPARED)}, figure names): "
          f"{'identical' if not problems else f'{len(problems)} difference(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

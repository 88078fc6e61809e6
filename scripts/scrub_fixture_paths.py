"""Replace the recording machine's absolute paths in recorded fixtures with placeholders.

Recorded runs and launcher logs (tests/fixtures/) carry the paths of the machine that
recorded them: the repository checkout, the virtualenv, the interpreter, temporary
folders, the home directory. They say nothing the tests read and tie the fixtures to
one machine, so every new recording goes through this once:

    python scripts/scrub_fixture_paths.py tests/fixtures            # rewrite in place
    python scripts/scrub_fixture_paths.py --check tests/fixtures    # list, exit 1 if any

Placeholders: <venv>, <python> (the interpreter's prefix), <repo> (a checkout under
/work), <home>, <tmp>. tests/unit/test_fixtures_clean.py fails on any path left.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_NAME = r"[A-Za-z0-9_.+-]+"
RULES = [
    (re.compile(rf"/work/{_NAME}/\.venv\b"), "<venv>"),
    (re.compile(r"/root/\.pyenv/versions/[0-9.]+"), "<python>"),
    (re.compile(r"/usr/lib/python3(?:\.[0-9]+)?\b"), "<python>/lib"),
    (re.compile(rf"/work/{_NAME}"), "<repo>"),
    (re.compile(rf"(?<![\w.>])/home/{_NAME}"), "<home>"),
    (re.compile(r"(?<![\w.>])/root\b"), "<home>"),
    (re.compile(r"(?<![\w.>])/tmp\b"), "<tmp>"),
]
# What a left-over machine path looks like (the check, and tests/unit/test_fixtures_clean.py).
MACHINE_PATH = re.compile(r"(?<![\w.>])/(?:work|root|home|tmp)(?:/|\b)")


def scrub(text: str) -> str:
    for pattern, placeholder in RULES:
        text = pattern.sub(placeholder, text)
    return text


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in
                  (".json", ".log", ".csv", ".txt", ".md"))


def leftovers(root: Path) -> list[tuple[Path, str]]:
    out = []
    for path in files(root):
        m = MACHINE_PATH.search(path.read_text(errors="replace"))
        if m:
            text = path.read_text(errors="replace")
            out.append((path, text[max(m.start() - 40, 0):m.end() + 40]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="only list the files with paths")
    args = ap.parse_args(argv)
    changed = 0
    for root in args.folders:
        if not args.check:
            for path in files(root):
                text = path.read_text(errors="surrogateescape")
                new = scrub(text)
                if new != text:
                    path.write_text(new, errors="surrogateescape")
                    changed += 1
        left = leftovers(root)
        for path, where in left:
            print(f"{path}: ...{where!r}...")
        if args.check and left:
            return 1
    if not args.check:
        print(f"scrubbed {changed} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

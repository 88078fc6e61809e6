"""Count the places that name the run folder's layout and how the report places sections.

Counted the same way on any checkout (tests/unit/test_run_folder.py holds the project to
the first count: only the run folder's owners name its layout):

    python scripts/count_layout.py              # this checkout
    python scripts/count_layout.py /tmp/before  # another tree (e.g. git archive aacca53)
    python scripts/count_layout.py --list       # and which file says what

1. Files that name the run folder's layout: project code (hvd_vs_ddp/, suites/; not the
   tests, scripts or docs) holding a string constant that IS one of the run folder's own
   names (manifest.json, cells, logs, inductor-cache, projection.json, damaged), used as a
   path (not as a JSON key: `d["cells"]`, `{"cells": ...}`, `.get("cells")` do not count;
   the folders' names, common words, only as `x / "cells"` or in a tuple of layout names),
   a path string starting "cells/" or "logs/", or recovering the run folder from a
   results path (`.parent.parent`).
2. Files that call the output gate directly (common/outputs.py's check, check_one,
   write_json, write_files, enclosing_run), outside common/.
3. How the report places sections: `title ==` searches and `sections.insert(` in
   hvd_vs_ddp/reports/ (0 when one declared order places them).
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

LAYOUT = {"manifest.json", "cells", "logs", "inductor-cache", "projection.json", "damaged"}
GATE = {"check", "check_one", "write_json", "write_files", "enclosing_run"}
PLACING = re.compile(r"\.title\s*==|sections\.insert\(")


def _is_key(node: ast.Constant, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    if isinstance(parent, ast.Dict) and node in parent.keys:
        return True
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) \
            and parent.func.attr in ("get", "setdefault", "pop") and node in parent.args:
        return True
    return isinstance(parent, ast.Compare)  # `k == "cells"`: comparing keys


def _as_path(node: ast.Constant, parent: ast.AST | None) -> bool:
    """A file name always counts; a folder's (cells, logs, damaged: also common words) only
    where it is a path piece: `x / "cells"`, `NAME = "damaged"`, or a tuple of layout names
    only."""
    if "." in node.value or "-" in node.value:
        return True
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
        return True
    if isinstance(parent, ast.Assign) and all(isinstance(t, ast.Name) for t in parent.targets):
        return True
    return isinstance(parent, ast.Tuple) and all(
        isinstance(e, ast.Constant) and e.value in LAYOUT for e in parent.elts)


def layout_names(tree: ast.AST) -> list[str]:
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in LAYOUT and not _is_key(node, parents.get(node)) \
                and _as_path(node, parents.get(node)):
            found.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith(("cells/", "logs/")) \
                and not isinstance(parents.get(node), ast.Expr):  # a path, not a docstring
            found.append(f"{node.lineno}: {node.value[:20]!r}")
        if isinstance(node, ast.Attribute) and node.attr == "parent" \
                and isinstance(node.value, ast.Attribute) and node.value.attr == "parent":
            found.append(f"{node.lineno}: .parent.parent")
    return found


def gate_calls(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "outputs" \
                and node.func.attr in GATE:
            found.append(f"{node.lineno}: outputs.{node.func.attr}")
    return found


def files(root: Path) -> list[Path]:
    return sorted(p for d in ("hvd_vs_ddp", "suites") for p in (root / d).rglob("*.py"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--list", action="store_true", help="name each file and what it says")
    args = ap.parse_args(argv)
    if not (args.root / "hvd_vs_ddp").is_dir():
        print(f"count_layout: error: {args.root}: no hvd_vs_ddp/ there", file=sys.stderr)
        return 2
    layout, gate, placing = {}, {}, {}
    for path in files(args.root):
        rel = path.relative_to(args.root).as_posix()
        text = path.read_text()
        tree = ast.parse(text)
        if hits := layout_names(tree):
            layout[rel] = hits
        if not rel.startswith("hvd_vs_ddp/common/") and (hits := gate_calls(tree)):
            gate[rel] = hits
        if rel.startswith("hvd_vs_ddp/reports/"):
            hits = [f"{i}: {ln.strip()}" for i, ln in enumerate(text.splitlines(), 1)
                    if PLACING.search(ln)]
            if hits:
                placing[rel] = hits
    for title, found in (("files naming the run folder's layout", layout),
                         ("files calling the output gate directly (outside common/)", gate),
                         ("report files placing sections by title / insert", placing)):
        n = sum(len(v) for v in found.values())
        print(f"{title}: {len(found)} files, {n} places")
        if args.list:
            for rel, hits in found.items():
                print(f"    {rel}: {'; '.join(hits)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""No module outside hvd_vs_ddp/backends/ decides by a backend's name.

What a backend is and honours is declared once (hvd_vs_ddp/backends/catalog.py); code
elsewhere asks the declaration (`catalog.get(name).library`, `.fixed_at_init`, ...). This
test reads every module of the package and the suites with `ast` and fails on a
comparison (==, !=, in, not in) with a backend name written as a string, or on
`.startswith(...)` with a backend name or prefix. Data that merely lists names (a
preset's backends, a colour table, the self-test's checks) is not branching and is not
flagged. The exceptions below are listed with the reason they are not branching on a
backend.

    python -m pytest tests/unit/test_backend_names.py -q
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hvd_vs_ddp.backends import catalog

ROOT = Path(__file__).resolve().parents[2]
NAMES = set(catalog.NAMES)
PREFIXES = {n.split("-")[0] for n in NAMES} | {n.split("-")[0] + "-" for n in NAMES}
# (file, the name string) -> why it is not a backend branch
EXCEPTIONS: dict[tuple[str, str], str] = {}  # none today


def _files() -> list[Path]:
    pkg = ROOT / "hvd_vs_ddp"
    return sorted([p for p in pkg.rglob("*.py") if "backends" not in p.relative_to(pkg).parts]
                  + list((ROOT / "suites").glob("*.py")))


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def branches(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each comparison with, or startswith of, a backend name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            for s in _strings(node.left) + [s for c in node.comparators for s in _strings(c)]:
                if s in NAMES:
                    out.append((node.lineno, s))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith")):
            for arg in node.args:
                for s in _strings(arg):
                    if s in NAMES or s in PREFIXES:
                        out.append((node.lineno, s))
    return out


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_branch_on_a_backend_name(path):
    rel = str(path.relative_to(ROOT))
    found = [(line, s) for line, s in branches(path) if (rel, s) not in EXCEPTIONS]
    assert not found, (f"{rel} decides by backend name at "
                       + ", ".join(f"line {ln} ({s!r})" for ln, s in found)
                       + "; ask the catalog (hvd_vs_ddp/backends/catalog.py) instead")


def test_the_check_finds_a_branch(tmp_path):
    """The check itself can fail: a module that branches on a name is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text('def f(b):\n    return b == "horovod" or b.startswith("ddp-")\n')
    assert [s for _, s in branches(bad)] == ["horovod", "ddp-"]


def test_exceptions_are_still_needed():
    """An exception whose branch no longer exists is removed, so the list stays honest."""
    for (rel, name), _why in EXCEPTIONS.items():
        assert any(s == name for _, s in branches(ROOT / rel)), (rel, name)

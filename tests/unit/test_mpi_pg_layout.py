"""Static checks of the hvd_vs_ddp/backends/mpi_pg package's layout (no MPI, no processes; < 1 s).

- the package's import graph has no cycle (every import counts: top level, inside
  functions and under TYPE_CHECKING), and the bottom-to-top module order that the
  package __init__ documents is one the imports respect;
- no module assigns, deletes or setattr()s another module's attributes, and none
  uses `global` (process state lives in state.STATE);
- every module has a docstring of its own (no shared banner; only __init__ carries
  the test command) and stays under 300 lines.

Run from the repo root:
    python -m pytest tests/unit/test_mpi_pg_layout.py -q
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "backends" / "mpi_pg"
PKG_DOTTED = "hvd_vs_ddp.backends.mpi_pg"
MAX_LINES = 300


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), filename=str(p))
            for p in sorted(PKG.glob("*.py"))}


def _imports(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    """Package modules that module `name` imports (`__init__` for the package itself)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and node.module and (
                    node.module == PKG_DOTTED or node.module.startswith(PKG_DOTTED + ".")):
                base = node.module[len(PKG_DOTTED) + 1:] or None
            else:
                continue
            if base:
                out.add(base.split(".")[0])
            else:  # `from . import x`: module x, or a name of the package __init__
                out.update(a.name if a.name in known else "__init__" for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PKG_DOTTED + "."):
                    out.add(a.name[len(PKG_DOTTED) + 1:].split(".")[0])
                elif a.name == PKG_DOTTED:
                    out.add("__init__")
    out.discard(name)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, tree, set(mods)) for name, tree in mods.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path, or None."""
    state: dict[str, int] = {}  # 1: on the DFS stack, 2: done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_import_graph_has_no_cycle():
    graph = _graph()
    assert len(graph) > 5 and "engine" in graph, f"package not found under {PKG}"
    cycle = _cycle(graph)
    assert cycle is None, "import cycle in hvd_vs_ddp/backends/mpi_pg: " + " -> ".join(cycle)


def test_cycle_detector_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_documented_order_is_respected():
    """The package docstring lists the modules bottom to top; each may import only
    modules listed before it."""
    doc = ast.get_docstring(_modules()["__init__"])
    layout = doc[doc.index("Package layout"):]
    layout = layout[:layout.index("\n\n")]
    order = list(dict.fromkeys(re.findall(r"(?<![/\w])(\w+)\.py\b", layout)))
    graph = _graph()
    assert set(order) == set(graph) - {"__init__"}, \
        f"the layout in __init__ lists {order}; the package has {sorted(graph)}"
    bad = [f"{m} imports {d}" for i, m in enumerate(order) for d in sorted(graph[m])
           if d == "__init__" or d not in order[:i]]
    assert not bad, "imports against the documented order: " + "; ".join(bad)


def _module_aliases(tree: ast.Module, known: set[str]) -> set[str]:
    """Names under which a module (any module) is bound in this module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module:
            names.update(a.asname or a.name for a in node.names if a.name in known)
    return names


def test_no_module_writes_another_modules_globals():
    mods = _modules()
    bad = []
    for name, tree in mods.items():
        aliases = _module_aliases(tree, set(mods))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                            and sub.value.id in aliases:
                        bad.append(f"{name}.py:{sub.lineno} assigns {sub.value.id}.{sub.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("setattr", "delattr") and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in aliases:
                bad.append(f"{name}.py:{node.lineno} {node.func.id}({node.args[0].id}, ...)")
            if isinstance(node, ast.Global):
                bad.append(f"{name}.py:{node.lineno} global {', '.join(node.names)} "
                           "(process state belongs in state.STATE)")
    assert not bad, "; ".join(bad)


def test_docstrings_are_the_modules_own_and_modules_are_short():
    mods = _modules()
    firsts: dict[str, str] = {}
    problems = []
    for name, tree in mods.items():
        doc = ast.get_docstring(tree)
        if not doc:
            problems.append(f"{name}.py has no docstring")
            continue
        first = doc.splitlines()[0]
        if first in firsts:
            problems.append(f"{name}.py and {firsts[first]}.py open with the same line")
        firsts[first] = name
        if name != "__init__" and ("tests/system/test_mpi_pg.py" in doc or "Part of the" in doc):
            problems.append(f"{name}.py repeats the package banner / test command")
        lines = len((PKG / f"{name}.py").read_text().splitlines())
        if lines >= MAX_LINES:
            problems.append(f"{name}.py has {lines} lines (limit {MAX_LINES})")
    assert "tests/system/test_mpi_pg.py" in ast.get_docstring(mods["__init__"])
    assert not problems, "; ".join(problems)

"""The project's import graph, built from the source with grimp: the package boundaries hold.

- no import cycle between the project's modules (lazy imports inside functions count;
  imports only under TYPE_CHECKING do not);
- backends/, workloads/, harness/, results_schema/ and the suites never import the CLI package
  (hvd_vs_ddp/): data flows launcher -> backend -> loop -> suite -> results, and the CLI
  only orchestrates;
- reports/, results_schema/ and common/ never import torch (a report must build on a machine
  without it), nor does the projection's cost model (projection/collectives, schedule,
  interconnects, model);
- common/ imports no other project package (it is the bottom layer).

    python -m pytest tests/unit/test_import_graph.py -q
"""
from __future__ import annotations

import ast
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.name for p in ROOT.iterdir()
                  if (p / "__init__.py").is_file() and p.name != "tests")
CLI = "hvd_vs_ddp"
TORCH_FREE = ("reports", "results_schema", "common")
NEVER_IMPORT_CLI = ("backends", "workloads", "harness", "results_schema", "reports", "common",
                    "projection")
# the projection's cost model: arithmetic only (its layout tracer is what needs torch)
TORCH_FREE_MODULES = ("projection.collectives", "projection.schedule",
                      "projection.interconnects", "projection.model")


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*PACKAGES, include_external_packages=True,
                             exclude_type_checking_imports=True)


def _ours(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def test_the_project_packages_are_found():
    assert {"backends", "workloads", "harness", "hvd_vs_ddp", "reports", "common"} <= \
        set(PACKAGES)


def test_no_import_cycle(graph):
    g = nx.DiGraph()
    for module in filter(_ours, graph.modules):
        g.add_node(module)
        g.add_edges_from((module, t) for t in graph.find_modules_directly_imported_by(module)
                         if _ours(t) and t != module)
    cycles = sorted(nx.simple_cycles(g), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:5])


@pytest.mark.parametrize("package", [p for p in NEVER_IMPORT_CLI if p in PACKAGES])
def test_lower_layers_never_import_the_cli(graph, package):
    chain = graph.find_shortest_chain(importer=package, imported=CLI, as_packages=True)
    assert chain is None, f"{package} imports the CLI package: {' -> '.join(chain)}"


@pytest.mark.parametrize("package", [p for p in TORCH_FREE if p in PACKAGES])
def test_torch_free_packages(graph, package):
    chain = graph.find_shortest_chain(importer=package, imported="torch", as_packages=True)
    assert chain is None, f"{package} imports torch: {' -> '.join(chain)}"


@pytest.mark.parametrize("module", TORCH_FREE_MODULES)
def test_torch_free_modules(graph, module):
    chain = graph.find_shortest_chain(importer=module, imported="torch")
    assert chain is None, f"{module} imports torch: {' -> '.join(chain)}"


def test_common_is_the_bottom_layer(graph):
    for module in graph.find_children("common") | {"common"}:
        inside = {t.split(".")[0] for t in graph.find_modules_directly_imported_by(module)}
        assert not (inside & set(PACKAGES)) - {"common"}, (module, inside)


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


@pytest.mark.parametrize("path", sorted((ROOT / "suites").glob("*.py")), ids=lambda p: p.name)
def test_suites_never_import_the_cli(path):
    """suites/ is not a package (pytest collects it by path), so it is checked by ast."""
    bad = sorted(m for m in _imports(path) if m.split(".")[0] == CLI)
    assert not bad, f"{path.name} imports {bad}"

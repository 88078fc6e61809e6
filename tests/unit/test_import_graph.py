"""The project's import graph, built from the source with grimp: the layers hold.

Everything is one installed namespace, `hvd_vs_ddp`; its layers, bottom up:

    common -> results_schema -> backends, workloads -> harness -> (suites/)
    results_schema -> run_model -> reports, projection -> cli

- no import cycle between the project's modules (lazy imports inside functions count,
  and so do imports made only for type checkers, under TYPE_CHECKING: a circle a type
  checker must untangle is a circle a reader must untangle);
- nothing below the CLI (hvd_vs_ddp.cli) imports it: data flows launcher -> backend ->
  loop -> suite -> results, and the CLI only orchestrates;
- the results format (results_schema) imports nothing that writes it (backends,
  workloads, harness) nor anything above it: what a file may say does not depend on
  today's code;
- the projection never imports the report (both read the typed run model);
- the recovery trials (hvd_vs_ddp.recovery) train through backends and workloads, never
  the suites' harness or the report, and neither the results format nor the run model
  imports them;
- reports, results_schema, common and the run model never import torch (a report must
  build on a machine without it), nor does the projection's cost model;
- common imports no other project package (it is the bottom layer);
- `run --budget` (hvd_vs_ddp.cli.budget) judges with the run model alone: it imports nothing
  from the report, which only renders what the run model judged;
- every import of the project's code names the namespace (`hvd_vs_ddp.backends`, never a
  bare `backends`), in the package, the suites, the tests, the scripts and the benchmarks.

    python -m pytest tests/unit/test_import_graph.py -q
"""
from __future__ import annotations

import ast
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = "hvd_vs_ddp"
PACKAGES = sorted(p.name for p in (ROOT / TOP).iterdir() if (p / "__init__.py").is_file())
CLI = f"{TOP}.cli"
TORCH_FREE = ("reports", "results_schema", "common", "run_model")
# the projection's cost model: arithmetic only (its layout tracer is what needs torch)
TORCH_FREE_MODULES = ("projection.collectives", "projection.schedule",
                      "projection.interconnects", "projection.model")
# (importer, imported): a layer that must never reach another, directly or not
FORBIDDEN = [(p, "cli") for p in PACKAGES if p != "cli"] + [
    ("results_schema", "backends"), ("results_schema", "workloads"),
    ("results_schema", "harness"), ("results_schema", "reports"),
    ("results_schema", "projection"), ("results_schema", "run_model"),
    ("projection", "reports"), ("run_model", "reports"), ("run_model", "projection"),
    ("backends", "harness"), ("workloads", "harness"),
    # the recovery trials write recovery records; what the format and the run model say
    # does not depend on them, and they train through backends and workloads only
    ("results_schema", "recovery"), ("run_model", "recovery"), ("recovery", "harness"),
    ("recovery", "reports"),
]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(TOP, include_external_packages=True,
                             exclude_type_checking_imports=True)


@pytest.fixture(scope="module")
def typed_graph():
    """The graph with the imports made only for type checkers counted too."""
    return grimp.build_graph(TOP, include_external_packages=True,
                             exclude_type_checking_imports=False)


def _ours(module: str) -> bool:
    return module.split(".")[0] == TOP


def test_the_project_packages_are_found():
    assert {"backends", "workloads", "harness", "cli", "reports", "common", "results_schema",
            "projection"} <= set(PACKAGES)


def test_no_import_cycle(typed_graph):
    graph = typed_graph
    g = nx.DiGraph()
    for module in filter(_ours, graph.modules):
        g.add_node(module)
        g.add_edges_from((module, t) for t in graph.find_modules_directly_imported_by(module)
                         if _ours(t) and t != module)
    cycles = sorted(nx.simple_cycles(g), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:5])


@pytest.mark.parametrize("importer,imported",
                         [f for f in FORBIDDEN if f[0] in PACKAGES and f[1] in PACKAGES],
                         ids=lambda x: x)
def test_layers(graph, importer, imported):
    chain = graph.find_shortest_chain(importer=f"{TOP}.{importer}",
                                      imported=f"{TOP}.{imported}", as_packages=True)
    assert chain is None, f"{importer} imports {imported}: {' -> '.join(chain)}"


# (module, package): a module that must never reach a package, directly or not
FORBIDDEN_MODULES = [("cli.budget", "reports")]


@pytest.mark.parametrize("importer,imported", FORBIDDEN_MODULES, ids=lambda x: x)
def test_module_layers(graph, importer, imported):
    assert f"{TOP}.{importer}" in graph.modules, importer
    chain = graph.find_shortest_chain(importer=f"{TOP}.{importer}",
                                      imported=f"{TOP}.{imported}", as_packages=True)
    assert chain is None, f"{importer} imports {imported}: {' -> '.join(chain)}"


@pytest.mark.parametrize("package", [p for p in TORCH_FREE if p in PACKAGES])
def test_torch_free_packages(graph, package):
    chain = graph.find_shortest_chain(importer=f"{TOP}.{package}", imported="torch",
                                      as_packages=True)
    assert chain is None, f"{package} imports torch: {' -> '.join(chain)}"


@pytest.mark.parametrize("module", TORCH_FREE_MODULES)
def test_torch_free_modules(graph, module):
    chain = graph.find_shortest_chain(importer=f"{TOP}.{module}", imported="torch")
    assert chain is None, f"{module} imports torch: {' -> '.join(chain)}"


def test_common_is_the_bottom_layer(graph):
    common = f"{TOP}.common"
    for module in graph.find_children(common) | {common}:
        inside = {".".join(t.split(".")[:2]) for t in
                  graph.find_modules_directly_imported_by(module) if _ours(t)}
        assert not inside - {common, TOP}, (module, inside)


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def _python_files() -> list[Path]:
    dirs = [ROOT / TOP, ROOT / "suites", ROOT / "tests", ROOT / "scripts", ROOT / "benchmarks"]
    return sorted(p for d in dirs for p in d.rglob("*.py") if "fixtures" not in p.parts)


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_import_names_the_namespace(path):
    """A bare `import reports` works only from the checkout's root (the top-level links
    backends/ and reports/ point into the package); installed, it would be someone else's."""
    bad = sorted(m for m in _imports(path) if m.split(".")[0] in PACKAGES)
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}; write hvd_vs_ddp.{bad[0]}"


@pytest.mark.parametrize("path", sorted((ROOT / "suites").glob("*.py")), ids=lambda p: p.name)
def test_suites_never_import_the_cli(path):
    """suites/ is not a package (pytest collects it by path), so it is checked by ast."""
    bad = sorted(m for m in _imports(path) if m == CLI or m.startswith(CLI + "."))
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("package", ["reports", "run_model", "results_schema"])
def test_backends_are_read_only_through_their_catalog(graph, package):
    """Above the results, a backend is what its declaration says (backends/catalog.py,
    torch-free), never its class."""
    allowed = {f"{TOP}.backends", f"{TOP}.backends.catalog", f"{TOP}.backends.launchers"}
    pkg = f"{TOP}.{package}"
    for module in graph.find_children(pkg) | {pkg}:
        reached = {t for t in graph.find_modules_directly_imported_by(module)
                   if t.startswith(f"{TOP}.backends")}
        assert reached <= allowed, (module, reached - allowed)

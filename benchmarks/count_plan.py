"""Where backends are judged and named: one plan per cell, judged once, counted the same
way on any tree.

Run it from a checkout's root with the tree to count first on PYTHONPATH:

    PYTHONPATH=$PWD python benchmarks/count_plan.py .
    PYTHONPATH=OTHER_CHECKOUT python benchmarks/count_plan.py OTHER_CHECKOUT

It prints:

1. judgement call sites: calls (AST) of the functions that answer "can this backend run
   (here, under this launcher, with these options, in this compile mode)?" in
   hvd_vs_ddp/ and suites/, outside hvd_vs_ddp/backends/ (where each backend's one
   judgement lives), by file; then those in the suites (suites/: every rank, test by
   test). The names: JUDGES below (the seven hooks of `Backend` and `X.judge`,
   the compile checks, the matrix's and the run request's filters, and, where a tree has
   them, the cell's one verdict and the plan's verdicts: cell_verdict.judge_cell,
   cell_plan.judge_backends) and QUALIFIED (catalog.conflict, launchers.fit,
   launchers.available, compile_support.refusal, and the matrix's judged layouts:
   matrix.judged, matrix.judge_again); not the report's statistical verdicts
   (verdicts.judge, a bare judge()). Names a tree does not have count nothing there, so
   the same script counts a tree before and after.
2. workload specs resolved for one cell: calls of workloads.external.resolve while the
   parent prepares one cell's launch (the compile preset's Horovod timeline cell: every
   per-cell option applies) and while one of its ranks gets its options at start-up
   (what suites/conftest.py runs: the options parsed from its command line, or its
   plan read).
3. what adding a backend touches: the files of hvd_vs_ddp/ whose string constants name
   at least three backends (a table listing every backend).
4. judgements asked at run time in the parent: while `hvd-vs-ddp run --backends
   ddp-gloo,horovod --world-sizes 1,2 --workloads mlp` builds its request, then while
   its runner prepares repetitions 1 and 2 of every cell up to the launch (the launch
   itself refused, so nothing starts), every call of a backend's judgement
   (registry.judge), a launcher's availability (launchers.available) or this torch's
   compile check (compile_support.torch_refusal), by the innermost function of
   hvd_vs_ddp/cli/ or hvd_vs_ddp/harness/ that asked, per phase.
"""
from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from collections import Counter
from pathlib import Path

JUDGES = {
    # Backend's capability hooks and the one judgement
    "availability", "launch_fit", "check_launch", "option_conflict", "runtime_conflict",
    "check_options", "compile_conflict", "judge",
    # the compile checks
    "compile_refusal", "torch_refusal",
    # the matrix's and the run request's filters
    "_fits_here", "_gpus_short", "gpu_refusal", "_refused", "_runnable",
    "_check_torch_compiles", "knob_refusal",
    # the cell's one verdict (hvd_vs_ddp/harness/cell_verdict.py) and the plan's verdicts
    "judge_cell", "judge_backends",
}
# generic names, counted only on the modules that judge with them
QUALIFIED = {("compile_support", "refusal"), ("catalog", "conflict"), ("launchers", "fit"),
             ("launchers", "available"), ("matrix", "judged"), ("matrix", "judge_again")}
NOT_OURS = {"verdicts"}  # run_model/verdicts.judge: a statistical verdict, not a backend's
BACKENDS = ("single", "dp", "ddp-gloo", "ddp-nccl", "ddp-mpi", "horovod", "fsdp", "zero")


def _callee(node: ast.Call) -> tuple[str | None, str | None]:
    f = node.func
    if isinstance(f, ast.Attribute):
        owner = f.value.id if isinstance(f.value, ast.Name) else None
        return owner, f.attr
    if isinstance(f, ast.Name):
        return None, f.id
    return None, None


def judgement_sites(root: Path) -> Counter[str]:
    sites: Counter[str] = Counter()
    files = [*sorted((root / "hvd_vs_ddp").rglob("*.py")), *sorted((root / "suites").rglob("*.py"))]
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel.startswith("hvd_vs_ddp/backends/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call):
                owner, name = _callee(node)
                if name == "judge" and not isinstance(node.func, ast.Attribute):
                    continue  # a bare judge(): the report's statistical verdict
                if (name in JUDGES and owner not in NOT_OURS) or (owner, name) in QUALIFIED:
                    sites[rel] += 1
    return sites


def _rank_path(rel: str) -> bool:
    """The suites: what every rank runs, test by test."""
    return rel.startswith("suites/")


def resolutions(root: Path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """((resolve calls, SuiteOptions built) in the parent for one cell, (the same) in one
    rank at its start)."""
    sys.path.insert(0, str(root))
    from hvd_vs_ddp.cli import matrix
    from hvd_vs_ddp.common.run_folder import RunFolder
    from hvd_vs_ddp.harness import options
    from hvd_vs_ddp.workloads import external

    calls = [0, 0]  # external.resolve calls, SuiteOptions built (each resolves them all)
    real, post_init = external.resolve, options.SuiteOptions.__post_init__

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    def built(self):
        calls[1] += 1
        return post_init(self)

    try:  # a tree whose presets and cell command lines are modules of their own
        from hvd_vs_ddp.cli import cell_command as command
        from hvd_vs_ddp.cli import presets
    except ImportError:  # before: all in the matrix
        command = presets = matrix
    preset = presets.preset("compile")
    cell = next(c for c in matrix.cells(preset, world_sizes=[2])
                if c.backend == "horovod" and "timeline" in c.suites)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        (run_dir / "cells").mkdir()
        results = str(run_dir / "cells" / f"{cell.id}.json")
        external.resolve = counted
        options.SuiteOptions.__post_init__ = built  # type: ignore[method-assign]
        try:
            if hasattr(command, "cell_options"):  # after: the plan, built once
                from hvd_vs_ddp.harness import cell_plan

                opts = command.cell_options(cell, preset, None, run_dir=str(run_dir))
                plan = command.plan(cell, opts, None, 600.0)
                plan_file = RunFolder(run_dir).plan(cell.id)
                cell_plan.write(plan, plan_file, owner=None)
                argv = command.pytest_argv(cell, str(plan_file), results)
            else:  # before: the options written as a command line
                argv = command.pytest_argv(cell, preset, results, None, run_dir=str(run_dir))
            parent = tuple(calls)
            calls[:] = [0, 0]
            rank_options(argv, options)
            return parent, tuple(calls)
        finally:
            external.resolve = real
            options.SuiteOptions.__post_init__ = post_init  # type: ignore[method-assign]


def rank_options(argv: list[str], options) -> object:
    """What a rank's conftest runs for its options (pytest_configure)."""
    if "--cell-plan" in argv:
        from hvd_vs_ddp.harness import cell_plan

        return cell_plan.read(argv[argv.index("--cell-plan") + 1]).options
    parser = argparse.ArgumentParser(add_help=False)
    try:  # a tree whose command-line side of the options is a module of its own
        from hvd_vs_ddp.harness import option_parsing as parsing
    except ImportError:  # before: all in options
        parsing = options
    for flag, kwargs in parsing._declarations():
        parser.add_argument(flag, **kwargs)
    ns, _ = parser.parse_known_args(argv)
    return parsing._from_values(lambda name: getattr(ns, name))  # = from_pytest


class _NoLaunch(Exception):
    pass


def run_time(root: Path) -> dict[str, Counter[str]]:
    """Section 4: {"request": Counter(asker), "runner": Counter(asker)}."""
    import inspect
    import os

    sys.path.insert(0, str(root))
    from hvd_vs_ddp.backends import compile_support, launchers, registry
    from hvd_vs_ddp.cli import app, run_request
    from hvd_vs_ddp.cli import runner as runner_mod

    where = [str(root / "hvd_vs_ddp" / "cli"), str(root / "hvd_vs_ddp" / "harness")]
    phase = {"now": "request"}
    asked: dict[str, Counter[str]] = {"request": Counter(), "runner": Counter()}

    def wrap(owner, name):
        real = getattr(owner, name)

        def counted(*args, **kwargs):
            frame = sys._getframe(1)
            while frame and not frame.f_code.co_filename.startswith(tuple(where)):
                frame = frame.f_back
            if frame:
                module = Path(frame.f_code.co_filename).stem
                asked[phase["now"]][f"{module}.{frame.f_code.co_name}"] += 1
            return real(*args, **kwargs)
        setattr(owner, name, counted)
        return real

    def no_launch(*args, **kwargs):
        raise _NoLaunch()

    saved = [(o, n, wrap(o, n)) for o, n in ((registry, "judge"), (launchers, "available"),
                                            (compile_support, "torch_refusal"))]
    saved.append((launchers, "command", launchers.command))
    launchers.command = no_launch
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            req = run_request.build(app.parser().parse_args(
                ["run", "--runs-dir", "runs", "--name", "r", "--backends", "ddp-gloo,horovod",
                 "--world-sizes", "1,2", "--workloads", "mlp", "--repeat", "2"]))
            phase["now"] = "runner"
            given = {"plans": req.plans} if "plans" in inspect.signature(
                runner_mod.Runner).parameters else {}
            r = runner_mod.Runner(req.run_dir, req.preset, list(req.cells), ["count"], 60.0,
                                  ["mlp"], repeat=2, **given)
            r.folder.make()
            for cell in req.cells:
                entry = r.manifest.cell(cell.id)
                for rep in entry.repeats or []:
                    try:
                        r._run_cell(cell, entry, rep)
                    except _NoLaunch:
                        pass
        finally:
            os.chdir(here)
            for owner, name, real in saved:
                setattr(owner, name, real)
    return asked


def backend_tables(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "hvd_vs_ddp").rglob("*.py")):
        names = {n.value for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Constant) and n.value in BACKENDS}
        if len(names) >= 3:
            out.append(f"{path.relative_to(root).as_posix()} ({len(names)} backends)")
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else ".").resolve()
    sites = judgement_sites(root)
    on_rank = {f: n for f, n in sites.items() if _rank_path(f)}
    print(f"1. judgement call sites outside hvd_vs_ddp/backends/: {sum(sites.values())} in "
          f"{len(sites)} files")
    for f, n in sorted(sites.items()):
        print(f"     {n:3d}  {f}")
    print(f"   of them in the suites (suites/: every rank, test by test): "
          f"{sum(on_rank.values())} in {len(on_rank)} files")
    parent, rank = resolutions(root)
    print("2. one cell (compile preset, Horovod timeline cell, np2): workload specs resolved "
          f"(external.resolve calls) {parent[0]} in the parent, {rank[0]} in each rank at its "
          f"start;\n   SuiteOptions built (each resolves every spec it names) {parent[1]} in "
          f"the parent, {rank[1]} in each rank")
    tables = backend_tables(root)
    print(f"3. files naming >= 3 backends (tables a new backend is added to): {len(tables)}")
    for t in tables:
        print(f"     {t}")
    asked = run_time(root)
    print("4. judgements asked at run time in the parent (run --backends ddp-gloo,horovod "
          "--world-sizes 1,2, repeat 2), by the function that asked:")
    for name, calls in asked.items():
        print(f"   the {name}: {sum(calls.values())} calls from {len(calls)} functions")
        for f, n in sorted(calls.items()):
            print(f"     {n:3d}  {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

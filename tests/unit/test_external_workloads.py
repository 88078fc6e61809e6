"""Workloads declare their parameters, and any PyTorch model is a workload.

- parameters are declared once (hvd_vs_ddp/workloads/params.py) and judged by their
  declaration, with the message the user sees ('image_size -3: expected an integer
  from 8 to 4096'), in `--workload-param` as in the ranks;
- one resolver (hvd_vs_ddp/workloads/external.py) takes every form of a workload name:
  built-in, entry point, module:function, path.py:function, torchvision:<model>,
  transformers:<model type>; specs travel in canonical form and appear as safe ids;
- a bad spec (missing module, missing function, wrong return type, a model that cannot
  be built, no trainable parameters, input of the wrong shape, a data set smaller than
  a batch) is refused by `hvd-vs-ddp run` with one line and exit 2 before any process
  starts (the runner is a tripwire; nothing is written);
- the docs' example file resolves, builds and checks.

    python -m pytest tests/unit/test_external_workloads.py -q
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from hvd_vs_ddp.cli import main, matrix, runner, selftest
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.common.errors import InputError, UnknownName
from hvd_vs_ddp.common.log import log
from hvd_vs_ddp.harness import option_parsing, options, profiling
from hvd_vs_ddp.workloads import Param, Workload, check, declare, external, params, registry
from tests.bad_inputs import cli_status, tree_hash
from tests.launch import ROOT

BENCH = "tests/external/bench_workload.py:make_workload"
BROKEN = "tests/external/broken_workloads.py"


# -- declarations ------------------------------------------------------------------
@pytest.mark.parametrize("param,text,message", [
    (Param("image_size", int, 8, 4096), "-3", "image_size -3: expected an integer from 8 to 4096"),
    (Param("image_size", int, 8, 4096), "64.0", "image_size 64.0: expected an integer"),
    (Param("image_size", int, 8, 4096), "", "image_size '': expected an integer"),
    (Param("lr", float, 0, 10, above_minimum=True), "0", "lr 0: expected a number > 0 and <= 10"),
    (Param("lr", float, 0, 10, above_minimum=True), "nan", "expected a number > 0"),
    (Param("lr", float, 0, 10, above_minimum=True), "inf", "expected a number > 0"),
    (Param("opt", str, choices=("sgd", "adamw")), "adam", "expected one of sgd, adamw"),
    (Param("flag", bool), "maybe", "flag maybe: expected true or false"),
    (Param("d", str, is_dir=True), "/no/such/dir", "d /no/such/dir: no such directory"),
])
def test_a_value_is_judged_by_its_declaration(param, text, message):
    with pytest.raises(ValueError) as err:
        param.parse(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_value_in_range_parses_to_its_type(tmp_path):
    assert Param("n", int, 1, 9).parse(" 3 ") == 3
    assert Param("lr", float, 0, 1, above_minimum=True).parse("1e-3") == 0.001
    assert Param("lr", float).parse("2") == 2.0 and isinstance(Param("lr", float).parse("2"),
                                                               float)
    assert Param("flag", bool).parse("yes") is True
    assert Param("d", str, is_dir=True, nullable=True).parse("none") is None
    assert Param("d", str, is_dir=True).parse(str(tmp_path)) == str(tmp_path.resolve())


def test_undeclared_parameters_are_typed_by_their_defaults():
    def make(batch_size: int = 4, lr: float = 0.1, name: str = "x", flag: bool = False,
             where: str | None = None) -> Workload:
        raise AssertionError
    got = params.of(make)
    assert {k: p.type for k, p in got.items()} == {"batch_size": int, "lr": float,
                                                   "name": str, "flag": bool, "where": str}
    assert got["where"].nullable and got["lr"].default == 0.1


def test_a_declaration_must_match_the_factory():
    with pytest.raises(params.DeclarationError, match="does not take"):
        @declare(Param("image_size", int, 8, 64))
        def make(batch_size: int = 4) -> Workload:
            raise AssertionError
    with pytest.raises(params.DeclarationError, match="default of image_size 2"):
        @declare(Param("image_size", int, 8, 64))
        def make2(image_size: int = 2) -> Workload:
            raise AssertionError


def test_every_built_in_workload_declares_every_parameter_with_a_range():
    for name in registry.names():
        for p in registry.parameters(name).values():
            assert p.help, (name, p.name)
            if p.type in (int, float):
                assert p.minimum is not None and p.maximum is not None, (name, p.name)


@pytest.mark.parametrize("spec,words", [
    ("resnet50:image_size=-3", ["image_size -3: expected an integer from 8 to 4096"]),
    ("gpt:heads=0", ["heads 0: expected an integer from 1 to 1024"]),
    ("mlp:lr=-1", ["lr -1: expected a number > 0"]),
    ("mlp:depth=x", ["depth x: expected an integer"]),
    ("resnet50:data_dir=/no/such/images", ["data_dir", "no such directory"]),
    (f"{BENCH}:hidden=0", ["hidden 0: expected an integer from 1 to 4096"]),
    (f"{BENCH}:blocks=2:x", ["blocks 2:x: expected an integer"]),  # VALUE may hold ':'
    ("torchvision:resnet18:image_size=4", ["image_size 4: expected an integer from 8"]),
])
def test_workload_param_is_judged_before_anything_starts(spec, words):
    with pytest.raises(InputError) as err:
        option_parsing.parse_argv(["--workload-param", spec])
    for w in words:
        assert w in str(err.value), str(err.value)


def test_workload_param_reaches_the_ranks_in_canonical_form(tmp_path):
    given, _ = option_parsing.parse_argv(["--workload-param", f"{BENCH}:hidden=8",
                                   "--workload-param", "mlp:lr=1"])
    spec = str((ROOT / BENCH.split(":")[0]).resolve()) + ":make_workload"
    assert given["workload_param"] == (f"{spec}:hidden=8", "mlp:lr=1.0")
    opts = options.SuiteOptions().replace(**given)
    assert opts.workload_params == {spec: {"hidden": 8}, "mlp": {"lr": 1.0}}
    again, _ = option_parsing.parse_argv(opts.to_argv())  # the ranks parse what the runner wrote
    assert options.SuiteOptions().replace(**again) == opts


# -- the resolver --------------------------------------------------------------------
def test_every_form_resolves_and_builds(monkeypatch):
    monkeypatch.chdir(ROOT)
    for name, kind in [("mlp", "builtin"), (BENCH, "file"),
                       ("tests.external.bench_workload:make_workload", "module"),
                       ("torchvision:resnet18", "torchvision")]:
        source = registry.resolve(name)
        assert source.kind == kind, name
        wl = registry.get(name)
        assert isinstance(wl, Workload) and wl.name == source.spec
        check.check(name, {}, world_size=2)


def test_a_file_spec_is_made_absolute_and_a_module_spec_kept():
    spec = external.canonical("./tests/../tests/external/bench_workload.py:make_workload")
    assert spec == f"{ROOT / 'tests/external/bench_workload.py'}:make_workload"
    assert external.canonical("tests.external.bench_workload:f") == \
        "tests.external.bench_workload:f"
    assert external.canonical("torchvision:vit_b_16") == "torchvision:vit_b_16"


def test_a_module_found_outside_site_packages_tells_the_ranks_its_folder(monkeypatch):
    monkeypatch.chdir(ROOT)
    source = registry.resolve("tests.external.bench_workload:make_workload")
    assert source.pythonpath == str(ROOT)
    assert registry.resolve("mlp").pythonpath is None


@pytest.mark.parametrize("spec", [
    "mlp", "torchvision:vit_b_16", "/abs/dir/my bench.py:make", "pkg.mod:make_workload",
    "transformers:gpt2", "C:odd/../x.py:f"])
def test_a_spec_has_a_safe_id(spec):
    s = external.slug(spec)
    assert s and all(c.isalnum() or c in "._-" for c in s) and not s.startswith(("-", "."))
    cell = Cell("horovod", "horovodrun-gloo", 2, ("throughput",), workload=spec)
    assert matrix.check_name(cell.id) == cell.id  # a file name
    assert "/" not in profiling.trace_name("r", spec, "default", 0)


def test_an_entry_point_names_an_installed_workload(tmp_path, monkeypatch):
    pkg = tmp_path / "fakebench_hvd"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from hvd_vs_ddp.workloads import registry\n"
        "def make(batch_size: int = 8):\n"
        "    return registry.mlp(batch_size=batch_size, samples=64)\n")
    info = tmp_path / "fakebench_hvd-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakebench-hvd\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[hvd_vs_ddp.workloads]\n"
                                           "fakebench = fakebench_hvd:make\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.setattr(external, "_cache", {})
    assert "fakebench" in external.entry_points()
    source = registry.resolve("fakebench")
    assert source.kind == "entry point" and list(source.params) == ["batch_size"]
    assert registry.get("fakebench", batch_size=4).batch_size == 4
    check.check("fakebench", {}, world_size=2)


def test_transformers_absent_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import raises ImportError
    monkeypatch.setattr(external, "_cache", {})
    with pytest.raises(InputError, match="transformers package is not installed"):
        registry.resolve("transformers:gpt2")


def test_a_transformers_model_by_config_name():
    pytest.importorskip("transformers", reason="transformers is not installed here; "
                        "hvd-vs-ddp does not require it (pip install transformers)")
    check.check("transformers:gpt2", {"seq_len": 8}, world_size=2)
    with pytest.raises(InputError, match="knows no model type"):
        registry.resolve("transformers:no-such-model-type")
    with pytest.raises(InputError, match="no causal or masked language model"):
        check.check("transformers:t5", {}, world_size=1)


def test_an_unknown_torchvision_model_is_one_line():
    with pytest.raises(InputError, match="not a torchvision classification or segmentation"):
        registry.resolve("torchvision:resnet5000")


def test_the_docs_example_resolves_builds_and_checks():
    example = ROOT / "docs" / "examples" / "own_model.py"
    check.check(f"{example}:make_workload", {}, world_size=2)
    assert "own_model.py:make_workload" in (ROOT / "docs" / "own-model.md").read_text()


# -- bad specs through the command, before any process starts ----------------------------
BAD_SPECS = [
    ("no.such.module:make_workload", ["cannot import module 'no.such.module'"]),
    ("tests/external/no_such_file.py:make_workload", ["no such file"]),
    ("tests/external/import_error.py:make_workload",
     ["raised ModuleNotFoundError", "a_package_that_is_not_installed"]),
    (f"{BROKEN}:no_such_function", ["has no function 'no_such_function'", "frozen_model"]),
    (f"{BROKEN}:NOT_CALLABLE", ["not a function"]),
    (f"{BROKEN}:returns_a_number", ["returned int", "Workload"]),
    (f"{BROKEN}:raises", ["raised RuntimeError", "not mounted"]),
    (f"{BROKEN}:required_parameter", ["'hidden' has no default"]),
    (f"{BROKEN}:unbuildable_model", ["its model cannot be built"]),
    (f"{BROKEN}:not_a_module", ["expected a torch.nn.Module"]),
    (f"{BROKEN}:frozen_model", ["no trainable parameters"]),
    (f"{BROKEN}:wrong_input_size", ["one step on a batch of 4 x (8,)", "fails"]),
    (f"{BROKEN}:tiny_data", ["3 samples", "fewer than one batch of 4"]),
    ("torchvision:vit_b_16", ["image_size=30", "cannot be built"]),  # not a multiple of 16
    ("bert", ["unknown workload 'bert'", "resnet50", "MODULE:FUNCTION"]),
    ("a,", ["without empty entries"]),
    (":make", ["expected NAME, MODULE:FUNCTION"]),
]


@pytest.fixture
def tripwire(monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("a refused command started cells")
    monkeypatch.setattr(runner.Runner, "run", started)
    monkeypatch.setattr(selftest, "run_check", started)
    monkeypatch.setattr(log, "handlers", [h for h in log.handlers
                                          if not getattr(h, "_hvd_vs_ddp", False)])


@pytest.mark.parametrize("spec,words", BAD_SPECS, ids=[s for s, _ in BAD_SPECS])
def test_a_bad_spec_is_refused_before_any_process_starts(spec, words, tripwire, tmp_path,
                                                         monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    argv = ["run", "--runs-dir", str(tmp_path / "runs"), "--backends", "ddp-gloo",
            "--world-sizes", "2", "--launchers", "torchrun", "--workloads", spec]
    if spec.startswith("torchvision:vit"):
        argv += ["--suite-args", "--workload-param torchvision:vit_b_16:image_size=30"]
    before = tree_hash(ROOT / "tests" / "external")
    code = cli_status(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:"), err
    for w in words:
        assert w.lower() in lines[0].lower(), lines[0]
    assert not (tmp_path / "runs").exists()
    assert tree_hash(ROOT / "tests" / "external") == before


def test_a_resumed_run_whose_spec_file_moved_is_one_line(tmp_path, tripwire, monkeypatch,
                                                         capsys):
    import shutil

    bench = tmp_path / "bench.py"
    shutil.copy(ROOT / BENCH.split(":")[0], bench)
    monkeypatch.chdir(tmp_path)
    req_args = ["run", "--runs-dir", "runs", "--name", "r", "--backends", "single",
                "--world-sizes", "1", "--workloads", f"{bench}:make_workload"]
    from hvd_vs_ddp.cli import app, run_request

    req = run_request.build(app.parser().parse_args(req_args))
    r = runner.Runner(req.run_dir, req.preset, list(req.cells), ["hvd-vs-ddp"], 60,
                      list(req.workloads or []))
    req.run_dir.joinpath("cells").mkdir(parents=True)
    r.save()  # the manifest as the run would leave it
    bench.unlink()
    monkeypatch.setattr(external, "_cache", {})  # a fresh process: nothing imported yet
    monkeypatch.setattr(check, "_done", set())
    capsys.readouterr()
    assert main(["run", "--resume", "runs/r"]) == 2
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert "--resume runs/r" in line and "no such file" in line


def test_the_registry_lists_every_parameter(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    registry.main(["resnet50", BENCH])
    out = capsys.readouterr().out
    assert "image_size=64  an integer from 8 to 4096" in out
    assert "hidden=32  an integer from 1 to 4096: residual width" in out


def test_unknown_name_keeps_its_type():
    with pytest.raises(UnknownName):
        registry.resolve("bert")
    assert Path(external.__file__).name == "external.py"

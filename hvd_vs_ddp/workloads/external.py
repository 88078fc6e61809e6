"""Workloads from outside the project: one resolver for every way to name one.

A workload is named by
- a built-in name (`mlp`, `resnet50`, ...: hvd_vs_ddp/workloads/registry.py);
- an entry point of an installed package, group `hvd_vs_ddp.workloads`
  (`[project.entry-points."hvd_vs_ddp.workloads"] mybench = "mypkg.bench:make_workload"`);
- `module:function`, the module importable where hvd-vs-ddp runs (`mypkg.bench:make_workload`);
- `path/to/file.py:function`, a file (made absolute, so the ranks load the same file);
- `torchvision:<model>`, any torchvision classification or segmentation model, and
  `transformers:<model type>`, a Hugging Face model built from its config with random
  weights (hvd_vs_ddp/workloads/zoo.py; neither library is required).

The function is a workload factory: keyword parameters with defaults (declared with
hvd_vs_ddp.workloads.params.declare, or typed by their defaults) returning a
hvd_vs_ddp.workloads.spec.Workload (docs/own-model.md). `resolve(spec)` imports it and
returns a `Source`; anything wrong (a module that does not import, a function that is
missing or not callable, a parameter without a default) is one InputError line. The
spec string, in its canonical form, is what the ranks get (`--workloads`), what the
results record and what the report shows; `slug(spec)` is its form for test ids and
file names.

    python -m hvd_vs_ddp.workloads.registry tests/external/bench_workload.py:make_workload
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from hvd_vs_ddp.workloads import params as declared
from hvd_vs_ddp.workloads.spec import WorkloadSpecError

ENTRY_POINT_GROUP = "hvd_vs_ddp.workloads"
ZOOS = ("torchvision", "transformers")  # `<zoo>:<model>` names a model of that library
FORMS = ("NAME, MODULE:FUNCTION, PATH.py:FUNCTION, torchvision:MODEL or "
         "transformers:MODEL_TYPE")
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # judged whole: fullmatch


@dataclass(frozen=True)
class Source:
    """A resolved workload name: its canonical spec, its factory, how it was found."""

    spec: str
    factory: Callable[..., Any]
    kind: str                      # builtin, entry point, module, file, torchvision, ...
    pythonpath: str | None = None  # a folder the ranks need on sys.path (module form)

    @property
    def params(self) -> dict[str, declared.Param]:
        try:
            return declared.of(self.factory)
        except declared.DeclarationError as exc:
            raise WorkloadSpecError(f"workload {self.spec!r}: {exc}") from None

    @property
    def builtin(self) -> bool:
        return self.kind == "builtin"


def is_spec(name: str) -> bool:
    """Whether `name` is a spec (has a ':') rather than a bare name."""
    return ":" in name


def _bad(spec: str, why: str) -> WorkloadSpecError:
    return WorkloadSpecError(f"workload {spec!r}: {why}")


def _split(spec: str) -> tuple[str, str]:
    if "," in spec:
        raise _bad(spec, "a workload spec cannot contain ','; --workloads separates "
                         "workloads with commas")
    target, _, func = spec.rpartition(":")
    if not target.strip() or not func.strip():
        raise _bad(spec, f"expected {FORMS}")
    return target, func


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or target.startswith(".")


def canonical(spec: str) -> str:
    """The spec as the ranks must get it: a file's path made absolute; others as given."""
    if not is_spec(spec):
        return spec
    target, func = _split(spec)
    if target in ZOOS or not _is_path(target):
        return f"{target}:{func}"
    return f"{Path(target).expanduser().resolve()}:{func}"


def slug(spec: str) -> str:
    """A form of the spec safe in pytest ids, cell ids and file names."""
    if _SAFE.fullmatch(spec):
        return spec
    target, _, func = spec.rpartition(":")
    tail = ""
    if _is_path(target):
        target, tail = Path(target).stem, "-" + hashlib.sha1(spec.encode()).hexdigest()[:6]
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{target}-{func}").strip("-.") or "workload"
    return s + tail


_cache: dict[str, Source] = {}


def resolve(spec: str, builtins: dict[str, Callable[..., Any]]) -> Source:
    """The Source of a workload name (registry.resolve passes the built-in table)."""
    if spec in builtins:
        return Source(spec, builtins[spec], "builtin")
    spec = canonical(spec)
    if spec not in _cache:
        with warnings.catch_warnings():  # a module's import-time warnings would make a
            warnings.simplefilter("ignore")  # refusal more than one line
            _cache[spec] = _resolve(spec, builtins)
    return _cache[spec]


def _resolve(spec: str, builtins: dict[str, Callable[..., Any]]) -> Source:
    if not is_spec(spec):
        return _entry_point(spec, builtins)
    target, func = _split(spec)
    if target in ZOOS:
        from hvd_vs_ddp.workloads import zoo

        return Source(spec, zoo.factory(target, func, spec), target)
    if _is_path(target):
        module, where, kind = _from_file(spec, Path(target)), None, "file"
    else:
        module = _from_module(spec, target)
        where, kind = _root(module, target), "module"
    factory = getattr(module, func, None)
    if factory is None:
        found = sorted(n for n, v in vars(module).items()
                       if callable(v) and not n.startswith("_") and
                       getattr(v, "__module__", None) == module.__name__)
        raise _bad(spec, f"{target} has no function {func!r}"
                   + (f" (it defines {', '.join(found[:8])})" if found else ""))
    if not callable(factory):
        raise _bad(spec, f"{func!r} in {target} is of type {type(factory).__name__}, not a "
                         "function that returns a Workload")
    source = Source(spec, factory, kind, where)
    source.params  # noqa: B018 - a factory whose parameters cannot be declared fails here
    return source


def _entry_point(name: str, builtins: dict[str, Callable[..., Any]]) -> Source:
    found = entry_points()
    if name not in found:
        from hvd_vs_ddp.common.errors import UnknownName

        err = UnknownName("workload", name, [*builtins, *sorted(found)])
        err.args = (f"{err.args[0]}; or a spec: {FORMS}",)
        raise err
    try:
        factory = found[name].load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the package's import raises
        raise _bad(name, f"entry point {found[name].value!r} ({ENTRY_POINT_GROUP}) does not "
                         f"load: {type(exc).__name__}: {exc}") from None
    if not callable(factory):
        raise _bad(name, f"entry point {found[name].value!r} is not a function")
    source = Source(name, factory, "entry point")
    source.params  # noqa: B018
    return source


def entry_points() -> dict[str, Any]:
    """name -> EntryPoint of the installed packages' workloads."""
    from importlib.metadata import entry_points as installed

    return {ep.name: ep for ep in installed(group=ENTRY_POINT_GROUP)}


def _from_file(spec: str, path: Path) -> Any:
    if not path.is_file():
        raise _bad(spec, f"no such file {path}")
    name = "hvd_vs_ddp_workload_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise _bad(spec, f"{path} is not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    # The user's folder is read, never written: no __pycache__ beside their file (or the
    # files it imports), whether or not PYTHONDONTWRITEBYTECODE is set.
    keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        loader_spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - a user's module may raise anything
        del sys.modules[name]
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _bad(spec, f"importing {path} raised {_first(exc)}") from None
    finally:
        sys.dont_write_bytecode = keep
    return module


def _from_module(spec: str, target: str) -> Any:
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise _bad(spec, f"cannot import module {target!r} ({exc}); install it or put its "
                         "folder on PYTHONPATH, or name its file: path/to/file.py:"
                         f"{spec.rpartition(':')[2]}") from None
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _bad(spec, f"importing {target!r} raised {_first(exc)}") from None


def _root(module: Any, target: str) -> str | None:
    """The sys.path folder the module was found in, when it is not an installed one (the
    ranks start in the checkout, so a module found through the current folder or a
    relative PYTHONPATH entry needs its folder given to them)."""
    import site
    import sysconfig

    file = getattr(module, "__file__", None)
    if not file:
        return None
    depth = len(target.split(".")) + (Path(file).name == "__init__.py")
    root = Path(file).resolve().parents[depth - 1]
    installed = {Path(p).resolve() for p in (*site.getsitepackages(),
                                             sysconfig.get_paths()["stdlib"],
                                             sysconfig.get_paths()["purelib"])}
    if any(root == p or root.is_relative_to(p) for p in installed):
        return None
    return str(root)


def _first(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")

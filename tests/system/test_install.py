"""`pip install .` installs one namespace: hvd_vs_ddp, and nothing generic beside it.

Builds the project's wheel, checks that every file in it lies under `hvd_vs_ddp/` (or its
dist-info) with the projection's data included, installs it into a fresh virtualenv and
imports from outside the checkout: `import hvd_vs_ddp.reports` works, `import reports`
(or any other generic name the project once installed) does not, and the `hvd-vs-ddp`
command runs. The heavy dependencies (torch, pandas) come from the project's own
virtualenv, appended after the fresh one's site-packages, so nothing is downloaded.

    python -m pytest tests/system/test_install.py -q
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ("backends", "common", "harness", "projection", "reports", "results_schema",
           "workloads", "runs", "cli")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a clean copy of the sources (a build/ folder left in the
    checkout by an earlier build would leak its stale packages into it)."""
    src, out = tmp_path_factory.mktemp("src") / "hvd-vs-ddp", tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "runs", "reports-out", "tests",
        "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(src)], check=True,
                   capture_output=True, timeout=300)
    return next(out.glob("hvd_vs_ddp-*.whl"))


def test_the_wheel_holds_one_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"hvd_vs_ddp", next(t for t in tops if t.endswith(".dist-info"))}, tops
    assert "hvd_vs_ddp/projection/data/published.csv" in names
    assert "hvd_vs_ddp/reports/__init__.py" in names and "hvd_vs_ddp/cli/app.py" in names


def test_installed_it_imports_only_under_its_namespace(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True,
                          check=True).stdout.strip()
    with zipfile.ZipFile(wheel) as z:  # what pip does for a pure wheel, minus the script
        z.extractall(site)
    deps = sysconfig.get_path("purelib")  # torch, pandas, ... from the project's venv
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = deps
    code = ("import importlib, hvd_vs_ddp, hvd_vs_ddp.reports, hvd_vs_ddp.cli\n"
            f"assert hvd_vs_ddp.__file__.startswith({site!r}), hvd_vs_ddp.__file__\n"
            f"bad = []\nfor name in {GENERIC!r}:\n"
            "    try:\n        importlib.import_module(name)\n        bad.append(name)\n"
            "    except ImportError:\n        pass\n"
            "print('generic importable:', bad)\nassert not bad\n"
            "from hvd_vs_ddp.cli import main\n"
            "raise SystemExit(main(['doctor']))\n")
    proc = subprocess.run([str(py), "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "generic importable: []" in proc.stdout
    assert "ddp-gloo" in proc.stdout  # doctor ran from the installed package

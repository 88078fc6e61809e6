"""Where the checkout is: the folder holding suites/ beside the installed package.

The suites are pytest files run by path (`pytest suites/`), so commands that start them
(`hvd-vs-ddp run`, the self-test) run from the checkout's root. The package itself is
imported as `hvd_vs_ddp` from wherever it is installed; nothing here touches sys.path
or PYTHONPATH.

    python -m hvd_vs_ddp.common.checkout     # prints the root, or why there is none
"""
from __future__ import annotations

from pathlib import Path

from hvd_vs_ddp.common.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "suites"


def suites_root() -> Path:
    """The checkout's root (cwd for the suites' node ids), or an InputError saying why."""
    if not (SUITES / "conftest.py").is_file():
        raise InputError(f"the suites are not beside this installation ({SUITES} is missing): "
                         "run hvd-vs-ddp from a clone of the project (pip install -e CLONE)")
    return ROOT


if __name__ == "__main__":
    try:
        print(suites_root())
    except InputError as exc:
        print(exc)

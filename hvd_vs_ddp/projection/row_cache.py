"""The published rows projected, kept on disk: `hvd-vs-ddp project` and the validation
compute them once per machine and version, not in every process (about 3 s each).

`published_rows.project_all` projects every published row (hvd_vs_ddp/projection/
data) with the model; the result depends only on the package's own files (its code and
the published tables), the draws asked for and the numerical libraries. So it is kept
under a key made of all of them: a SHA-256 of every file of the hvd_vs_ddp package, the
versions of Python, numpy, scipy, torch and torchvision, and the call's arguments. Any
change to any of them is another key, so a kept result is never stale. Kept as a pickle
in $HVD_VS_DDP_CACHE/projection (default ~/.cache/hvd-vs-ddp/projection, beside
Horovod's wheels), written atomically; a file that cannot be read or written is passed
over and the rows are computed (`HVD_VS_DDP_CACHE=off`: never kept).

    python -m hvd_vs_ddp.projection.row_cache      # the key and the folder
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import os
import pickle
import platform
import tempfile
from pathlib import Path
from typing import Any, Callable, TypeVar

from hvd_vs_ddp.common.cache import cache_root

T = TypeVar("T")
PACKAGE = Path(__file__).resolve().parents[1]  # hvd_vs_ddp/
DEPENDENCIES = ("numpy", "scipy", "torch", "torchvision")


def folder() -> Path | None:
    """Where results are kept, or None where keeping is off."""
    root = cache_root()
    return None if root is None else root / "projection"


@functools.cache
def _package_digest(root: Path = PACKAGE) -> str:
    """Every file under root (its path and bytes) and the libraries' versions."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in DEPENDENCIES:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{dist}={version}\0".encode())
    h.update(platform.python_version().encode())
    return h.hexdigest()


def key(*args: Any) -> str:
    return hashlib.sha256(f"{_package_digest()}\0{args!r}".encode()).hexdigest()[:32]


def cached(name: str, args: tuple, compute: Callable[[], T]) -> T:
    """compute(), or what it returned before under the same key. Processes asking for the
    same value at once take turns (a file lock beside it): the second reads what the first
    kept instead of computing it too (~30 CPU-s; the unit tests' two workers did)."""
    where = folder()
    path = None if where is None else where / f"{name}-{key(name, *args)}.pickle"
    if path is None:
        return compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115 - held for the block
    except OSError:
        return _read_or_compute(path, compute)  # no lock here: computed, as without one
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _read_or_compute(path, compute)


def _read_or_compute(path: Path, compute: Callable[[], T]) -> T:
    """The value kept at `path`, or compute() kept there (atomically) for the next."""
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)  # noqa: S301 - this package's own file, keyed above
    except Exception:  # noqa: BLE001 - absent, unreadable or damaged: computed anew
        pass
    value = compute()
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass  # not kept: the next process computes it again
    return value


if __name__ == "__main__":
    print(f"key prefix {_package_digest()[:16]}, kept in {folder() or 'nowhere (off)'}")

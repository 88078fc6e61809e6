"""hvd_vs_ddp/projection/row_cache.py: a kept result is returned instead of computed, a
damaged one is computed anew, any change to the package's files is another key, and
`HVD_VS_DDP_CACHE=off` keeps nothing.

    python -m pytest tests/unit/test_row_cache.py -q
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from hvd_vs_ddp.projection import row_cache


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HVD_VS_DDP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "projection"


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value
    return compute, calls


def test_a_kept_result_is_returned_not_computed(kept):
    value = {"draws": np.arange(5.0), "rows": ("a", 1)}
    compute, calls = _counting(value)
    first = row_cache.cached("t", (200,), compute)
    again = row_cache.cached("t", (200,), compute)
    assert len(calls) == 1 and len(list(kept.glob("t-*.pickle"))) == 1
    assert np.array_equal(again["draws"], value["draws"]) and again["rows"] == ("a", 1)
    assert again is not first  # each call its own copy: callers fill rows in
    row_cache.cached("t", (100,), compute)  # other arguments: another key
    assert len(calls) == 2


def test_a_damaged_file_is_computed_anew_and_replaced(kept):
    compute, calls = _counting([1, 2, 3])
    row_cache.cached("t", (1,), compute)
    (path,) = kept.glob("t-*.pickle")
    path.write_bytes(b"not a pickle")
    assert row_cache.cached("t", (1,), compute) == [1, 2, 3] and len(calls) == 2
    assert row_cache.cached("t", (1,), compute) == [1, 2, 3] and len(calls) == 2


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HVD_VS_DDP_CACHE", "off")
    monkeypatch.setenv("HOME", str(tmp_path))
    compute, calls = _counting(7)
    assert row_cache.cached("t", (), compute) == 7 and row_cache.cached("t", (), compute) == 7
    assert len(calls) == 2 and not any(tmp_path.rglob("*.pickle"))


def test_any_change_to_the_package_is_another_key(tmp_path):
    copy = tmp_path / "pkg"
    shutil.copytree(row_cache.PACKAGE / "projection", copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = row_cache._package_digest(copy)
    table = copy / "data" / "head_to_head.csv"
    table.write_text(table.read_text() + "\n")
    row_cache._package_digest.cache_clear()  # once per process in use
    assert row_cache._package_digest(copy) != before

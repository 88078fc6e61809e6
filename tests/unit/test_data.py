"""The data sets every backend trains on.

    python -m pytest tests/unit/test_data.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

from hvd_vs_ddp.workloads import data


def test_digits_read_without_sklearn_are_load_digits():
    """The digits read straight from scikit-learn's CSV file are load_digits()'s arrays,
    element for element (a scikit-learn that moves or changes the file fails here, not
    silently in a convergence check)."""
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    reference = sklearn_datasets.load_digits()
    pixels, labels = data.digits_arrays()
    assert pixels.shape == data.DIGITS_SHAPE
    np.testing.assert_array_equal(pixels, reference.data)
    np.testing.assert_array_equal(labels, reference.target)


def test_digits_split_is_seeded_and_disjoint():
    train, held = data.digits(train=True), data.digits(train=False)
    assert len(train) + len(held) == data.DIGITS_SHAPE[0]
    assert len(train) == int(0.8 * data.DIGITS_SHAPE[0])
    again = data.digits(train=True)
    assert bool((train.tensors[0] == again.tensors[0]).all())
    assert float(train.tensors[0].max()) <= 1.0 and float(train.tensors[0].min()) >= 0.0

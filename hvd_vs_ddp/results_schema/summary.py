"""Median and inter-quartile range of raw measurements: the one implementation.

Frame builders (hvd_vs_ddp/results_schema/kinds/) and hvd_vs_ddp/run_model/stats.py both use
these, so every table,
figure and check shows the same numbers. Non-finite values are left out; no finite
value at all is a ValueError.

    from hvd_vs_ddp.results_schema.summary import median, iqr
    median([0.1, 0.2, 0.3]), iqr([1, 2, 3, 4, 5])      # 0.2, (2.0, 4.0)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

Values = Sequence[float] | np.ndarray  # anything np.asarray makes floats of


def finite_values(x: Values) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ValueError("no finite values")
    return a


def median(x: Values) -> float:
    return float(np.median(finite_values(x)))


def iqr(x: Values) -> tuple[float, float]:
    """(q25, q75) with numpy's default linear interpolation."""
    q25, q75 = np.percentile(finite_values(x), [25, 75])
    return float(q25), float(q75)

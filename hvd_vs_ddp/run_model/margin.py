"""The verdict words and the practical margin, shared by measured and projected answers.

A ratio r = horovod/ddp samples per second (> 1: Horovod faster) with an interval
[lo, hi] and a margin m (default 5%) is one of three verdicts: "faster" when the
interval lies beyond the band [1/(1+m), 1+m], "equivalent" when it lies inside it,
"inconclusive" when it straddles an edge. The report's measured verdicts
(hvd_vs_ddp/run_model/verdicts.py, which words them) and the projection's verdicts
(hvd_vs_ddp/projection/verdict.py) both classify with this module, so a projected
"equivalent" means what a measured one means. It sits in the run model's layer because
the projection may not import the report.

    from hvd_vs_ddp.run_model.margin import classify, DEFAULT_MARGIN
    classify(0.88, 0.93, DEFAULT_MARGIN)      # "faster" (DDP, since hi < 1/1.05)
    python -m hvd_vs_ddp.run_model.margin 0.88 0.93 [margin]
"""
from __future__ import annotations

import math
import sys

DEFAULT_MARGIN = 0.05
FASTER, EQUIVALENT, INCONCLUSIVE = "faster", "equivalent", "inconclusive"
VERDICTS = (FASTER, EQUIVALENT, INCONCLUSIVE)


def check_margin(m: float) -> float:
    if not (isinstance(m, (int, float)) and 0 < m < 1):
        raise ValueError(f"--margin {m!r}: expected a fraction between 0 and 1, e.g. 0.05 "
                         "for ±5%")
    return float(m)


def band(m: float) -> tuple[float, float]:
    return 1 / (1 + m), 1 + m


def smallest_faster(half_width: float, m: float) -> float:
    """The smallest difference (a fraction: 0.12 = 12%) an interval of this half-width on
    the log scale calls "faster": a true ratio r is called so once its interval clears
    1 + m, i.e. r > (1 + m) exp(half_width). The report's inconclusive pairs (measured
    width) and `run`'s resolution before it starts (expected width) both say it."""
    return (1 + m) * math.exp(half_width) - 1


def classify(lo: float, hi: float, m: float) -> str:
    low, high = band(m)
    if lo > high or hi < low:
        return FASTER
    if low <= lo and hi <= high:
        return EQUIVALENT
    return INCONCLUSIVE


if __name__ == "__main__":
    lo_, hi_ = float(sys.argv[1]), float(sys.argv[2])
    print(classify(lo_, hi_, float(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_MARGIN))

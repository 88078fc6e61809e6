"""One look for every figure: a fixed colour per backend label, line styles, the theme.

Colours are keyed by the backend's display label, never assigned by plotting order,
so ddp-gloo is the same blue in every figure of every report; each backend's colour is
declared in its catalog row (hvd_vs_ddp/backends/catalog.py `colour`). Horovod is labelled by
its controller when backend_meta names one: "horovod (gloo)", "horovod (mpi)"; all
Horovod shades are warm (vermillion, orange), all DDP ones cool (blues, green).
Colours are from the Okabe-Ito colour-blind-safe set: told apart with deuteranopia, but
some Horovod and DDP shades are as light as each other in grey (orange and sky blue), so
the figures' lines also differ by library: Horovod's dash-dot (LINESTYLE), DDP's solid
(tests/unit/test_report_browser_colours.py checks both).

    from hvd_vs_ddp.reports.theme import color, style   # labels: run_model/labels.py
    with style():  # seaborn theme, as a context: global matplotlib state is untouched
        ...
"""
from __future__ import annotations

import contextlib
import hashlib
from typing import Iterator

import matplotlib

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.run_model.labels import RAW_SWEEP, catalog_labels

matplotlib.use("Agg")  # reports never open windows

# Each backend's colour is its catalog row's (`colour`, and `controller_colours` for its
# labels per controller), in the catalog's order; then the raw mpi4py sweep's.
PALETTE = {**dict(catalog_labels()), RAW_SWEEP: "#7F7F7F"}  # keys in labels.ORDER's order
_SPARE = ("#7F7F7F", "#8C564B", "#BCBD22", "#9467BD", "#17BECF", "#F0E442")
REFERENCE = "single (reference)"


def color(label: str) -> str:
    """Fixed colour of a backend label; unknown labels get a stable spare colour."""
    if label in PALETTE:
        return PALETTE[label]
    digest = int(hashlib.sha256(label.encode()).hexdigest(), 16)
    return _SPARE[digest % len(_SPARE)]


HOROVOD_LINE, OTHER_LINE = "-.", "-"


def linestyle(label: str) -> str:
    """Horovod's series dash-dot, every other solid: the libraries apart in grey too."""
    lib = catalog.library(label.split(" ", 1)[0])
    return HOROVOD_LINE if lib == catalog.HOROVOD_LIB else OTHER_LINE


def palette(labels) -> dict[str, str]:
    return {lab: color(lab) for lab in labels}


@contextlib.contextmanager
def style() -> Iterator[None]:
    import seaborn as sns  # here, not at import: seaborn imports scipy.stats (1-2 s of CPU)
    # and pyplot, which a report that draws no figure does not need

    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.9),
          "figure.dpi": 100, "savefig.dpi": 110, "axes.titlesize": 11,
          "axes.titleweight": "bold", "legend.fontsize": 8.5, "legend.title_fontsize": 9,
          "legend.frameon": True, "legend.framealpha": 0.9, "font.family": "DejaVu Sans",
          # Titles at a fixed height: matplotlib otherwise measures every axis's tick
          # labels on every draw to lift a title over top ticks, which no figure here has
          # (the same pixels, a sixth less drawing time).
          "axes.titley": 1.0}
    with matplotlib.rc_context(rc):
        yield

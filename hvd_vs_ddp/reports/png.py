"""A matplotlib Figure as PNG bytes, laid out and drawn once (the report's figures,
hvd_vs_ddp/reports/figures.py). savefig alone draws a figure with a layout engine twice;
here the layout runs once on the Agg canvas and the figure is saved without its engine,
with the same pixels. The figure is spent afterwards: save it once.

    from hvd_vs_ddp.reports.png import to_png
    png = to_png(fig)
"""
from __future__ import annotations

import io

import matplotlib as mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from hvd_vs_ddp.common import output_formats


def to_png(fig: Figure) -> bytes:
    """The figure as PNG at the theme's savefig.dpi. A figure with a layout engine is laid
    out here, once, on the Agg canvas at that dpi (what savefig would do), and then saved
    with no engine: savefig otherwise draws the whole figure twice, first without
    rendering only to run the layout. The same layout, so the same pixels. The figure is
    spent afterwards (no engine, its blank minor ticks and edge spines out): save it once."""
    dpi = mpl.rcParams["savefig.dpi"]
    engine = fig.get_layout_engine()
    _drop_blank_minor_ticks(fig)
    if engine is not None:
        _edge_spines_out_of_layout(fig)
        FigureCanvasAgg(fig)
        if dpi != "figure":
            fig.set_dpi(dpi)
        engine.execute(fig)
        with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
            fig.set_layout_engine(None)  # no engine at all: "none" keeps a placeholder,
            # and savefig's first draw runs for any engine
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi,  # marked: the output gate knows it
                metadata={"Software": None, **output_formats.png_metadata(output_formats.FIGURE)})
    return buf.getvalue()


def _drop_blank_minor_ticks(fig: Figure) -> None:
    """No minor ticks on an axis whose minor ticks draw nothing: no tick marks, no grid
    lines (the theme draws neither) and an empty label at every one, as on a log axis over
    more than a decade. Each minor tick is otherwise built and laid out on every draw and
    layout pass (a log axis over eight decades has some sixty)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_minor_locator(), NullLocator):
                continue
            tick = axis.minorTicks[0]
            if any(a.get_visible() for a in (tick.tick1line, tick.tick2line, tick.gridline)):
                continue
            labels = (tick.label1, tick.label2)
            if any(lab.get_visible() for lab in labels) and any(
                    axis.get_minor_formatter().format_ticks(list(axis.get_minorticklocs()))):
                continue
            axis.set_minor_locator(NullLocator())


def _edge_spines_out_of_layout(fig: Figure) -> None:
    """Leave out of the layout's measuring each spine that lies on its axes' edge with no
    tick marks drawn on it (the theme draws none): its box is then the edge itself, inside
    the axes' own box, so the margins come out the same, and measuring it cost a tick
    update of its axis per spine in each of the layout's passes."""
    for ax in fig.axes:
        for spine in ax.spines.values():
            axis = spine.axis
            if (axis is None or spine.spine_type not in ("left", "right", "top", "bottom")
                    or tuple(spine.get_position()) != ("outward", 0.0)):
                continue
            ticks = [*axis.majorTicks[:1], *axis.minorTicks[:1]]
            if not any(t.tick1line.get_visible() or t.tick2line.get_visible() for t in ticks):
                spine.set_in_layout(False)

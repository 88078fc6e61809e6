"""What the report's pictures owe a reader, without a browser: both libraries'
colours told apart with red-green colour blindness (a deuteranopia simulation) and in
grey (a contrast check, and where two shades are as light as each other the lines differ
by library: Horovod dash-dot), and the recovery figure's panels on one time axis.

    python -m pytest tests/unit/test_report_browser_design.py -q
"""
from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
import pytest

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.reports import compare, recovery_section, render
from hvd_vs_ddp.reports.figures import Figures, throughput_fig
from hvd_vs_ddp.reports.theme import HOROVOD_LINE, PALETTE, linestyle
from hvd_vs_ddp.run_model import recovery_pairs
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.load import load_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
# Machado, Oliveira & Fernandes (2009): deuteranopia at severity 1.0, on linear RGB
DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968],
                         [0.280085, 0.672501, 0.047413],
                         [-0.011820, 0.042940, 0.968881]])


def _linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(rgb: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two colours' luminances: what is left of them in grey."""
    ya, yb = (float(_linear(c) @ [0.2126, 0.7152, 0.0722]) for c in (a, b))
    return (max(ya, yb) + 0.05) / (min(ya, yb) + 0.05)


def _library(label: str) -> str | None:
    return catalog.library(label.split(" ", 1)[0])


HVD = sorted({c for lab, c in PALETTE.items() if _library(lab) == catalog.HOROVOD_LIB})
DDP = sorted({c for lab, c in PALETTE.items() if _library(lab) == "ddp"})


def test_both_libraries_have_colours():
    assert HVD and DDP


@pytest.mark.parametrize("hvd, ddp", list(product(HVD, DDP)))
def test_horovod_and_ddp_colours_differ_with_deuteranopia(hvd, ddp):
    seen = [_lab(np.clip(DEUTERANOPIA @ _linear(c), 0, 1)) for c in (hvd, ddp)]
    assert np.linalg.norm(seen[0] - seen[1]) >= 40, f"{hvd} and {ddp} look alike (deuteranopia)"


def test_in_grey_the_libraries_differ_by_lightness_or_by_line():
    """Each Horovod shade against each DDP one: a contrast of 1.3 in grey, or else the
    lines tell them apart (orange against sky blue: 1.02; so Horovod's lines dash-dot)."""
    close = [(h, d) for h, d in product(HVD, DDP) if _contrast(h, d) < 1.3]
    assert close, "every pair is apart in grey: the line styles would then be optional"
    assert linestyle("horovod (gloo)") == linestyle("horovod") == HOROVOD_LINE
    assert all(linestyle(b) != HOROVOD_LINE for b in ("ddp-gloo", "ddp-nccl", "ddp-mpi"))
    # the two sides of the answer's usual pair stay apart in grey by themselves
    assert _contrast(PALETTE["horovod"], PALETTE["ddp-gloo"]) >= 1.3


def test_table_cells_keep_their_text_readable():
    """The verdict cells' backgrounds (Horovod / DDP faster) under the report's text."""
    for cls in ("hvd", "ddp"):
        bg = render.CSS.split(f"td.{cls}{{background:", 1)[1][:7]
        assert _contrast(bg, "#1d1d1f") >= 7, (cls, bg)


class _Kept(Figures):
    """Figures that keep the matplotlib Figure (the report keeps only its PNG)."""
    def __init__(self) -> None:
        super().__init__()
        self.drawn: dict[str, object] = {}

    def add(self, name, title, fig, caption="", group=""):
        self.drawn[name] = fig
        super().add(name, title, fig, caption, group)


def test_horovod_lines_are_dash_dot_in_the_throughput_figure():
    data = build_frames([load_run(FIXTURES / "cpu-small")])
    figs = _Kept()
    throughput_fig(compare.add_scaling(data.throughput), figs, False)
    lines = [(c.get_label(), c.lines[0].get_linestyle())  # errorbar: its data line first
             for ax in figs.drawn["throughput"].axes for c in ax.containers]
    hvd = [s for lab, s in lines if lab.startswith("horovod")]
    ddp = [s for lab, s in lines if lab.startswith("ddp")]
    assert hvd and ddp, lines
    assert set(hvd) == {HOROVOD_LINE} and HOROVOD_LINE not in ddp, lines


def test_recovery_panels_share_the_time_axis():
    data = build_frames([load_run(FIXTURES / "cpu-recovery")])
    figs = _Kept()
    recovery_section.figure(recovery_pairs.frame(data), figs)
    axes = [ax for ax in figs.drawn[recovery_section.FIGURE].axes if ax.get_visible()]
    assert len(axes) >= 2
    limits = {tuple(round(x, 6) for x in ax.get_xlim()) for ax in axes}
    assert len(limits) == 1, f"the panels' time axes differ: {sorted(limits)}"
    assert all(ax.xaxis.get_ticklabels()[0].get_visible() for ax in axes)  # each labelled

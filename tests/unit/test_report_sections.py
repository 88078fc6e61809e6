"""The report is built from a list of sections (hvd_vs_ddp/reports/sections/): each a
module or package with one entry `build(ctx)`, placed by the one ORDER, nothing placed by
searching for titles. Cheap: no report is built here.

    python -m pytest tests/unit/test_report_sections.py -q
"""
from __future__ import annotations

import inspect
import pkgutil
import re
from pathlib import Path

from hvd_vs_ddp.reports import sections
from hvd_vs_ddp.reports.render import Section

REPORTS = Path(sections.__file__).resolve().parents[1]


def test_every_section_has_one_entry_over_the_context():
    for module in sections.ORDER:
        params = list(inspect.signature(module.build).parameters)
        assert params == ["ctx"], f"{module.__name__}.build{params}: one argument, the context"
        assert module.__doc__, f"{module.__name__}: say what the section shows"


def test_every_section_module_is_in_the_order_once():
    here = {m.name for m in pkgutil.iter_modules(sections.__path__)}
    placed = [m.__name__.rsplit(".", 1)[1] for m in sections.ORDER]
    assert len(placed) == len(set(placed)), "a section placed twice"
    assert set(placed) == here, f"not placed: {here - set(placed)}; gone: {set(placed) - here}"


def test_nothing_places_sections_by_their_titles():
    found = [f"{p.relative_to(REPORTS)}:{i}" for p in REPORTS.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\.title\s*==|sections\.insert\(|\.index\(\w*\)\s*\+\s*1", line)]
    assert not found, f"sections placed by title: {found}"


def test_build_sections_keeps_the_order_and_drops_the_empty(monkeypatch):
    class One:
        def __init__(self, title):
            self.title = title

        def build(self, ctx):
            return None if self.title is None else Section(self.title)

    monkeypatch.setattr(sections, "ORDER", (One("b"), One(None), One("a")))
    assert [s.title for s in sections.build_sections(None)] == ["b", "a"]

"""A report read in a real browser: headless Chromium (Debian's package, driven by
Playwright's Python API with the system browser; nothing is downloaded at run time) opens
report.html from the file and lists what a reader would trip over, one finding a line.

    python -m hvd_vs_ddp.reports.browser_check reports-out/RUN/report.html   # exit 1: findings

Checked (tests/unit/test_report_browser.py runs it over every recorded run's report):
console errors, requests leaving the file, figures that do not decode or lack alt text,
tables and figures wider than the viewport at 1366 px, anything cut at 390 px (a phone)
outside a scroll container, the answer box outside the first screen, in-page links that
land nowhere, table cells over 120 characters outside a folded element, absolute paths of
the machine in the text, printing to PDF (and tables cut on its pages), and axe-core's
serious or critical accessibility findings (axe-core from npm, scripts/setup.sh puts it
in the project's cache). Without Chromium or Playwright, `browser()` raises Unavailable
with the reason (the tests skip with it).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from hvd_vs_ddp.common.cache import cache_root
from hvd_vs_ddp.reports import browser_js

WIDE, PHONE, SCREEN_H = 1366, 390, 768
PRINT_W = 718  # A4's width less 10 mm margins each side, in CSS px (96 per inch)
CELL_MAX = 120
ANSWER_MAX = 480  # characters in one line of the answer box (a case's answer: about 450)
AXE_VERSION = "4.11.0"  # scripts/setup.sh installs this one


class Unavailable(RuntimeError):
    """No browser here (the reason says what is missing)."""


def chromium_path() -> str | None:
    for name in (os.environ.get("HVD_VS_DDP_CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and (found := shutil.which(name)):
            return found
    return None


def axe_path() -> Path | None:
    """axe-core's script in the project's cache (scripts/test.sh puts it there), or None."""
    cache = cache_root()
    p = cache / "axe" / "node_modules" / "axe-core" / "axe.min.js" if cache else None
    return p if p is not None and p.is_file() else None


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """One headless Chromium for many pages (Playwright's Browser)."""
    exe = chromium_path()
    if exe is None:
        raise Unavailable("no Chromium (apt-get install chromium; scripts/test.sh installs "
                          "it in CI or with HVD_VS_DDP_TEST_BROWSER=1)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise Unavailable("no playwright package (the project's dev extra)") from None
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True,
                               args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


@dataclass
class Page:
    """A report open at one width; `findings` collects what went wrong while loading."""
    page: Any
    findings: list[str] = field(default_factory=list)

    def js(self, script: str, arg: Any = None) -> Any:
        return self.page.evaluate(script, arg)


@contextlib.contextmanager
def open_page(b: Any, html: Path, width: int = WIDE, height: int = SCREEN_H) -> Iterator[Page]:
    ctx = b.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    p = Page(page)

    def console(m: Any) -> None:
        if m.type == "error":
            p.findings.append(f"console error: {m.text[:200]}")
    page.on("console", console)
    page.on("pageerror", lambda e: p.findings.append(f"page error: {str(e)[:200]}"))

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("file:", "data:", "about:")):
            r.continue_()
        else:
            p.findings.append(f"request leaving the file: {url[:120]}")
            r.abort()
    page.route("**/*", route)
    page.goto(html.resolve().as_uri(), wait_until="load")
    try:
        yield p
    finally:
        ctx.close()


def _lines(prefix: str, items: list[str], most: int = 8) -> list[str]:
    out = [f"{prefix}: {s}" for s in items[:most]]
    if len(items) > most:
        out.append(f"{prefix}: ... and {len(items) - most} more")
    return out


def check_wide(p: Page) -> list[str]:
    """At 1366 px: figures, overflow, the first screen, links, cells and paths."""
    out = list(p.findings)
    out += _lines("figure", p.js(browser_js.FIGURES))
    out += _lines("wider than the viewport at 1366 px", p.js(browser_js.WIDER))
    top = p.js(browser_js.ANSWER_BOX)
    if top is None:
        out.append("no answer box (.headline)")
    elif top > SCREEN_H:
        out.append(f"answer box not in the first screen: ends at {top:.0f} px > {SCREEN_H}")
    out += _lines(f"answer line over {ANSWER_MAX} characters",
                  p.js(browser_js.LONG_ANSWERS, ANSWER_MAX))
    out += _lines("in-page link", p.js(browser_js.LINKS))
    out += _lines(f"cell over {CELL_MAX} characters", p.js(browser_js.LONG_CELLS, CELL_MAX))
    out += _lines("path or Python value of the machine", p.js(browser_js.PATHS))
    return out


def check_phone(p: Page) -> list[str]:
    return list(p.findings) + _lines("cut at 390 px", p.js(browser_js.CUT))


def check_print(p: Page) -> list[str]:
    p.page.emulate_media(media="print")
    p.page.set_viewport_size({"width": PRINT_W, "height": 1000})
    out = _lines("cut on a printed page", p.js(browser_js.WIDER))
    pdf = p.page.pdf(format="A4", margin={"top": "10mm", "bottom": "10mm",
                                          "left": "10mm", "right": "10mm"})
    if not pdf.startswith(b"%PDF") or pdf.count(b"/Type /Page") < 1:
        out.append("printing to PDF gave no pages")
    return out


def check_axe(p: Page, axe: Path) -> list[str]:
    p.page.add_script_tag(content=axe.read_text())
    found = p.js(browser_js.AXE)
    return _lines("accessibility", [f"{v['impact']} {v['id']} ({v['nodes']}x): {v['help']}"
                                    for v in found if v["impact"] in ("serious", "critical")])


def check_report(b: Any, html: Path, axe: Path | None = None) -> list[str]:
    """Every finding for one report (empty: the report reads well in a browser)."""
    with open_page(b, html) as p:
        out = check_wide(p)
        if axe is not None:
            out += check_axe(p, axe)
        out += check_print(p)
    with open_page(b, html, PHONE, 844) as p:
        out += check_phone(p)
    return list(dict.fromkeys(out))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    axe = axe_path()
    if axe is None:
        print(f"(no axe-core {AXE_VERSION} in the project's cache: no accessibility check)")
    bad = 0
    with browser() as b:
        for a in argv:
            found = check_report(b, Path(a), axe)
            bad += len(found)
            print(f"{a}: {len(found)} finding(s)")
            for f in found:
                print(f"  {f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Every recorded run's report read in a real browser: headless Chromium from
Debian's archive, driven by Playwright with the system browser (nothing downloaded), one
browser per pytest worker. hvd_vs_ddp/reports/browser_check.py lists what a reader would
trip over (console errors, requests leaving the file, figures that do not decode or lack
alt text, overflow at 1366 px, anything cut at 390 px, the answer box below the first
screen, links that land nowhere, cells over 120 characters, machine paths, printing, and
axe-core's serious or critical findings); each report must have none.

The second half proves each check by failing it: a report broken on purpose (a figure
that does not decode, a table that overflows, ...) must give the matching finding.
Without Chromium or Playwright every test here skips, saying why (scripts/setup.sh
installs both, and axe-core from npm into the project's cache).

    python -m pytest tests/unit/test_report_browser.py -q
    python -m hvd_vs_ddp.reports.browser_check reports-out/RUN/report.html   # by hand
"""
from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from hvd_vs_ddp.reports import browser_check, build_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
BUDGET = "cpu-repeats+budget"  # cpu-repeats with a replayed 4-minute `run --budget`
# Every recorded run; cpu-repeats as BUDGET only (the same sections, and the Budget one):
# building a report is most of these tests' time.
RUNS = [*sorted(p.name for p in FIXTURES.iterdir()
                if (p / "manifest.json").is_file() and p.name != "cpu-repeats"), BUDGET]


@pytest.fixture(scope="session")
def chromium():
    cm = browser_check.browser()
    try:
        b = cm.__enter__()
    except browser_check.Unavailable as err:
        pytest.skip(str(err))
    yield b
    cm.__exit__(None, None, None)


def budget_run(dst: Path) -> Path:
    """cpu-repeats cut to 3 repetitions, then settled by `run --budget`'s loop on its
    recorded repetitions (tests/unit/test_budget.py's Replay): a run with a budget plan."""
    from hvd_vs_ddp.cli import budget
    from tests.unit.test_budget import Replay

    shutil.copytree(FIXTURES / "cpu-repeats", dst)
    keep, budget.GIVE_UP = budget.GIVE_UP, 0.6  # give some pairs up, as on a real run
    try:
        budget.settle(Replay(dst, minutes=4.0), stream=io.StringIO())
    finally:
        budget.GIVE_UP = keep
    return dst


@pytest.fixture(scope="session")
def report_of(tmp_path_factory, recorded_report):
    """report_of(RUN) -> its report.html: a recorded run's shared report
    (tests/unit/conftest.py), BUDGET's built once per worker on first use."""
    built: dict[str, Path] = {}

    def get(run: str) -> Path:
        if run != BUDGET:
            return recorded_report(run).html
        if run not in built:
            tmp = tmp_path_factory.mktemp(run)
            built[run] = build_report([budget_run(tmp / "run")], tmp / "out" / "report.html").html
        return built[run]
    return get


@pytest.mark.parametrize("run", RUNS)
def test_the_report_reads_well_in_a_browser(chromium, report_of, run):
    html = report_of(run)
    found = browser_check.check_report(chromium, html, browser_check.axe_path())
    assert not found, f"{run}: {len(found)} finding(s):\n" + "\n".join(found)


def test_axe_core_is_installed():
    if browser_check.chromium_path() is None:
        pytest.skip("no Chromium, so no accessibility check either")
    if browser_check.axe_path() is None:
        pytest.skip(f"no axe-core {browser_check.AXE_VERSION} in the project's cache "
                    "(scripts/setup.sh installs it with npm): no accessibility check")


# --- each check proves itself: a report broken on purpose, the finding it must give ----

def _png(html: str) -> str:
    return re.search(r"data:image/png;base64,[A-Za-z0-9+/=]+", html).group(0)


MUTATIONS = {
    # what is broken: (how, the finding that must appear)
    "a figure that does not decode": (
        lambda h: h.replace(_png(h), "data:image/png;base64,iVBORw0KGgoAAAAbroken", 1),
        "does not decode"),
    "a truncated figure": (lambda h: h.replace(_png(h), _png(h)[:300], 1),
                           "does not decode to its last row"),
    "a figure without alt text": (lambda h: re.sub(r"alt='[^']*'", "alt=''", h, count=1),
                                  "no alt text"),
    "a table that overflows at 1366 px": (
        lambda h: h.replace("</style>", "td,th{white-space:nowrap!important}</style>", 1),
        "wider than the viewport at 1366 px"),
    "a table cut at 390 px, outside a scroll container": (
        lambda h: h.replace(".tw{overflow-x:auto", ".tw{overflow-x:visible", 1)
        .replace("</style>", "td,th{white-space:nowrap!important}</style>", 1),
        "cut at 390 px"),
    "a table cut on a printed page": (
        lambda h: h.replace("@media print{", "@media not print{", 1)
        .replace("</style>", "td,th{white-space:nowrap!important}</style>", 1),
        "cut on a printed page"),
    "a request leaving the file": (
        lambda h: h.replace("</main>", "<img alt='x' src='http://192.0.2.1/x.png'></main>"),
        "request leaving the file"),
    "a console error": (
        lambda h: h.replace("</main>", "<script>console.error('boom')</script></main>"),
        "console error: boom"),
    "a link to nowhere": (lambda h: h.replace("<nav aria-label='sections'>",
                                              "<nav aria-label='sections'><a href='#gone'>x</a>"),
                          "#gone: no such element"),
    "the answer box below the first screen": (
        lambda h: h.replace("<div class='headline'>",
                            "<div style='height:900px'></div><div class='headline'>"),
        "answer box not in the first screen"),
    "a 200-character cell": (lambda h: h.replace("<td>", "<td>" + "x " * 100, 1),
                             "cell over 120 characters"),
    "a machine path": (lambda h: h.replace("</main>", "<p>see /home/me/runs/a</p></main>"),
                       "/home/me/runs/a"),
}


@pytest.fixture()
def recovery_html(report_of) -> str:
    """cpu-recovery's report: tables, a figure, folded cells (built once per worker)."""
    return report_of("cpu-recovery").read_text()


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_a_broken_report_is_caught(chromium, recovery_html, what, tmp_path):
    mutate, finding = MUTATIONS[what]
    bad = tmp_path / "report.html"
    bad.write_text(mutate(recovery_html))
    assert bad.read_text() != recovery_html, f"the mutation '{what}' changed nothing"
    phone = "390 px" in finding  # only the check that should find it: half the time
    check = (browser_check.check_phone if phone else browser_check.check_print
             if "printed page" in finding else browser_check.check_wide)
    with browser_check.open_page(chromium, bad, *((browser_check.PHONE, 844) if phone else
                                                  ())) as page:
        found = check(page)
    assert any(finding in f for f in found), f"{what}: not caught; found: {found}"


def test_axe_finds_an_unlabelled_button(chromium, recovery_html, tmp_path):
    axe = browser_check.axe_path()
    if axe is None:
        pytest.skip("no axe-core in the project's cache (scripts/setup.sh installs it)")
    bad = tmp_path / "report.html"
    bad.write_text(recovery_html.replace("</main>", "<button></button></main>"))
    found = browser_check.check_report(chromium, bad, axe)
    assert any("accessibility: critical button-name" in f for f in found), found

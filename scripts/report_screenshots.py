"""The report's pictures in docs/, from one browser run: the recorded runs'
reports are built, read by hvd_vs_ddp/reports/browser_check.py (no picture is taken of a
report with findings), and photographed in the same headless Chromium at 1366 px, so the
pictures never drift from what the report looks like.

    python scripts/report_screenshots.py            # writes docs/answer.png, docs/report-*.png
    python scripts/report_screenshots.py --out DIR  # elsewhere

docs/answer.png (the README's): the header and the answer box of cpu-repeats' report;
docs/report-pairs.png: its Horovod vs DDP table; report-throughput.png, -metadata.png;
docs/report-recovery.png: cpu-recovery's Failure and recovery section.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hvd_vs_ddp.reports import browser_check, build_report  # noqa: E402

RUNS = ROOT / "tests" / "fixtures" / "runs"
TALLEST = 1500  # px: a taller section is cut there (its first figures)
# picture name -> (run, what: "answer" or a section's id)
SHOTS = {"answer.png": ("cpu-repeats", "answer"),
         "report-pairs.png": ("cpu-repeats", "horovod-vs-ddp"),
         "report-throughput.png": ("cpu-repeats", "throughput-and-scaling"),
         "report-metadata.png": ("cpu-repeats", "metadata"),
         "report-recovery.png": ("cpu-recovery", "failure-and-recovery")}


def _shoot(page, what: str, path: Path) -> None:
    page.evaluate("() => window.scrollTo(0, 0)")
    if what == "answer":  # from the title down to the answer box's bottom
        box = page.evaluate("() => { const r = document.querySelector('.headline')"
                            ".getBoundingClientRect(); return r.bottom + 16; }")
        page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": browser_check.WIDE,
                                              "height": box})
        return
    r = page.evaluate("(id) => { const r = document.getElementById(id)"
                      ".getBoundingClientRect(); return [r.x, r.y + window.scrollY, r.width,"
                      " r.height]; }", what)
    page.screenshot(path=str(path), full_page=True,
                    clip={"x": max(r[0] - 16, 0), "y": r[1] - 8, "width": r[2] + 32,
                          "height": min(r[3] + 16, TALLEST)})


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, browser_check.browser() as b:
        html = {run: build_report([RUNS / run], Path(tmp) / run / "report.html").html
                for run in sorted({r for r, _ in SHOTS.values()})}
        for run, page in html.items():
            found = browser_check.check_report(b, page, browser_check.axe_path())
            if found:
                print(f"{run}: {len(found)} finding(s); no pictures:\n  " + "\n  ".join(found))
                return 1
        for name, (run, what) in SHOTS.items():
            with browser_check.open_page(b, html[run]) as p:
                _shoot(p.page, what, args.out / name)
            print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

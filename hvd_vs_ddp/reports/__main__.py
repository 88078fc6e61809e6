"""Command line: python -m reports RUN_DIR [RUN_DIR ...] -o OUT.html

Writes OUT.html (self-contained), OUT.md and OUT_figures/*.png. With two run
directories the report adds a before/after section (B = the second vs A = the first).
Bad input prints one line "report: error: ..." and exits with status 2; a report
written with some passed cells' results unreadable (listed in it) exits with 3; a
failed write (a full disk) prints one line and exits with 74 (as `hvd-vs-ddp report`).

    python -m reports runs/2026-11-22 -o reports-out/report.html
    python -m reports runs/before runs/after -o reports-out/compare.html
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hvd_vs_ddp.common.errors import EXIT_BAD_INPUT, EXIT_PARTIAL_REPORT, EXIT_WRITE_FAILED
from hvd_vs_ddp.reports.build import build_report
from hvd_vs_ddp.reports.errors import ReportError
from hvd_vs_ddp.results_schema import WriteError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", type=Path, help="run directories (manifest.json)")
    ap.add_argument("-o", "--out", type=Path, required=True,
                    help="output .html path (the .md and _figures/ go beside it)")
    args = ap.parse_args(argv)
    try:
        paths = build_report(args.run_dirs, args.out)
    except ReportError as err:
        print(f"report: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except WriteError as err:
        print(f"report: error: {err}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    print(f"wrote {paths.html}\nwrote {paths.markdown} (+ {len(paths.figures)} figures in "
          f"{paths.figures_dir})")
    for line in paths.unreadable:
        print(f"report: warning: unreadable, left out of the report: {line}", file=sys.stderr)
    return EXIT_PARTIAL_REPORT if paths.unreadable else 0


if __name__ == "__main__":
    sys.exit(main())

"""The `hvd-vs-ddp` command and its orchestration: doctor, run, report, project.

Everything a user types is parsed and judged here (hvd_vs_ddp/cli/app.py), once, before
any process starts; the matrix (which cells a run has), the runner (cells as real
launches), the self-test and the cell error lines live beside it. Nothing below this
package imports it.

    hvd-vs-ddp --help          # or: python -m hvd_vs_ddp.cli --help
"""
from hvd_vs_ddp.cli.app import main, parser

__all__ = ["main", "parser"]

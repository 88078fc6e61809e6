"""The README is a front door: at most 200 lines, the two commands first, its links alive.

    pytest tests/unit/test_readme.py
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 200  # detail belongs in docs/


def test_the_readme_stays_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def test_the_readme_opens_with_the_main_job_and_the_tests():
    head = "\n".join(README.read_text().splitlines()[:10])
    assert "bash scripts/compare.sh" in head and "bash scripts/test.sh" in head


def test_every_document_the_readme_names_exists():
    named = set(re.findall(r"\b((?:docs|deploy|scripts)/[\w./-]+\.(?:md|sh|py|png))",
                           README.read_text()))
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"README.md names missing files: {missing}"

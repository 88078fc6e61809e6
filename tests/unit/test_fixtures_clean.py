"""Recorded fixtures carry no path of the machine that recorded them.

tests/fixtures/ holds real recorded runs, launcher logs, traces and autotune logs; every
recording goes through scripts/scrub_fixture_paths.py, which puts placeholders (<repo>,
<venv>, <python>, <home>, <tmp>) where the recording machine's absolute paths were.
This fails on any path left, and checks that the scrubber itself finds and replaces one.

    python -m pytest tests/unit/test_fixtures_clean.py -q
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("scrub", ROOT / "scripts" /
                                               "scrub_fixture_paths.py")
scrub = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scrub)


def test_no_fixture_carries_a_machine_path():
    left = scrub.leftovers(ROOT / "tests" / "fixtures")
    assert not left, ("machine paths in fixtures (run scripts/scrub_fixture_paths.py "
                      "tests/fixtures): " + "; ".join(f"{p.relative_to(ROOT)}: {w!r}"
                                                      for p, w in left[:10]))


def test_the_scrubber_replaces_each_kind_of_path():
    text = ('File "/work/wt16/.venv/lib/python3.11/site.py" /work/main/workloads/loop.py '
            '/root/.pyenv/versions/3.11.7/lib/threading.py /root/.cache/x /tmp/runs16b/a '
            '"/home/alice/data" cwd=/work/wt-why')
    out = scrub.scrub(text)
    assert not scrub.MACHINE_PATH.search(out), out
    assert out == ('File "<venv>/lib/python3.11/site.py" <repo>/workloads/loop.py '
                   '<python>/lib/threading.py <home>/.cache/x <tmp>/runs16b/a '
                   '"<home>/data" cwd=<repo>')
    assert scrub.MACHINE_PATH.search(text)

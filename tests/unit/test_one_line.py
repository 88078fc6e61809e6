"""hvd_vs_ddp.common.errors.one_line: a message quoting a user's odd value stays one line (found by
the command-line property test: `run --preset 0 --resume $'0\\x85'` printed two lines).

    python -m pytest tests/unit/test_one_line.py -q
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hvd_vs_ddp.cli import main as cli
from hvd_vs_ddp.common.errors import one_line


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text())
def test_any_text_becomes_one_line(text):
    out = one_line(text)
    assert len(out.splitlines()) <= 1 and "\r" not in out and "\n" not in out


def test_plain_text_is_unchanged():
    assert one_line("unknown backend 'ddp-gloö'; known: a, b") == \
        "unknown backend 'ddp-gloö'; known: a, b"


def test_a_line_break_inside_a_value_is_escaped_in_the_error(capsys):
    assert cli(["run", "--preset", "quick", "--resume", "0\x85"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "0\\x85" in err

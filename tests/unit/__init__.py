"""Unit tests: no process is launched; seconds in all.

    python -m pytest tests/unit -q
"""

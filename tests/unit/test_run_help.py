"""`hvd-vs-ddp run --help` names every preset and every input mode (the front door).

    pytest tests/unit/test_run_help.py
"""
from __future__ import annotations

import re

from hvd_vs_ddp.cli import app, presets
from hvd_vs_ddp.common.input_modes import DEFAULT_INPUT, INPUT_MODES


def _run_help() -> str:
    sub = next(a for a in app.parser()._actions if a.dest == "command" or
               getattr(a, "choices", None) and "run" in (a.choices or {}))
    return " ".join(sub.choices["run"].format_help().split())


def test_run_help_lists_every_preset():
    text = _run_help()
    text = text[text.index("options:"):]  # past the usage line
    preset_help = text[text.index("--preset PRESET"):text.index("--backends BACKENDS")]
    missing = [p for p in presets.PRESETS if not re.search(rf"\b{re.escape(p)}\b", preset_help)]
    assert not missing, f"run --help does not name preset(s) {missing}: {preset_help}"


def test_run_help_names_every_input_mode_and_the_default():
    text = _run_help()
    text = text[text.index("options:"):]
    input_help = text[text.index("--input INPUT"):text.index("--repeat REPEAT")]
    assert all(m in input_help for m in INPUT_MODES)
    assert f"{DEFAULT_INPUT} (a few ready batches" in input_help and "the default" in input_help

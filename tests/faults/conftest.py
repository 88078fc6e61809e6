"""The collective pytest plugin, for the fault-injection tests in this folder only.

tests/test_faults.py runs this folder's test under real launchers; a rank
fails an assertion or sleeps past the time limit, selected by HVD_FAULT.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hvd_vs_ddp import collective_pytest  # noqa: E402


def pytest_addoption(parser):
    collective_pytest.addoption(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.hvd_plugin = collective_pytest.register(config)


def pytest_unconfigure(config):
    config.hvd_plugin.unconfigure()

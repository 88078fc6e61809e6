"""The collective pytest plugin, for the fault-injection tests in this folder only.

tests/system/test_faults.py runs this folder's test under real launchers; a rank
fails an assertion or sleeps past the time limit, selected by HVD_FAULT.
"""
import pytest

from hvd_vs_ddp.harness import collective_pytest


def pytest_addoption(parser):
    collective_pytest.addoption(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.hvd_plugin = collective_pytest.register(config)


def pytest_unconfigure(config):
    config.hvd_plugin.unconfigure()

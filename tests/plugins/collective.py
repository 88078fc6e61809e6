"""The collective pytest plugin for the fault-injection cases of tests/faults/ only.

tests/system/test_faults.py loads it by name in the jobs it starts (`-p
tests.plugins.collective`), so that a plain `pytest tests/` never registers it: its
watchdog would otherwise end the whole test session with a "rank 0 of 1 is stuck"
message instead of failing one test (tests/unit/test_plugins_confined.py checks).

    torchrun --nproc-per-node 2 -m pytest -p tests.plugins.collective \
        tests/faults/fault_cases.py --rootdir tests/faults --test-time-limit 10
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

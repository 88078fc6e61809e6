"""Test-only pytest plugins stay out of the project's own test session.

The collective plugin (hvd_vs_ddp/harness/collective_pytest.py) makes a session
collective: a watchdog per test that ends the whole process, outcomes merged across
ranks. The fault cases need it (tests/system/test_faults.py loads tests/plugins/collective.py
by name in the jobs it starts); `pytest tests/` must not have it: a conftest.py in
tests/faults once registered it for the whole session, and its watchdog then ended the
run with "rank 0 of 1 is stuck" instead of failing one test. Likewise the mutation and
kill-rank plugins are loaded only by name, in the jobs their tests start.

    python -m pytest tests/unit/test_plugins_confined.py -q
"""
from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ONLY_BY_NAME = ("collective_pytest.register", "tests.plugins.mutations",
                "tests.plugins.kill_rank", "tests.plugins.collective")


def test_this_session_has_no_collective_plugin(request):
    assert request.config.pluginmanager.get_plugin("hvd_vs_ddp_collective") is None
    assert not hasattr(request.config, "hvd_plugin")


def test_no_conftest_under_tests_registers_a_test_only_plugin():
    for conftest in TESTS.rglob("conftest.py"):
        text = conftest.read_text()
        assert "pytest_plugins" not in text, conftest
        for name in ONLY_BY_NAME:
            assert name not in text, f"{conftest} loads {name} for every test below it"


def test_the_fault_cases_are_not_collected_by_pytest_tests():
    assert not (TESTS / "faults" / "conftest.py").exists()
    assert not list((TESTS / "faults").glob("test_*.py"))

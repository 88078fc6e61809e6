"""A workload module that does not import (a missing dependency)."""
import a_package_that_is_not_installed  # noqa: F401


def make_workload():
    return None

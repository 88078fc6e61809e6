"""Workloads from outside the project, for the tests of issue 28 (docs/own-model.md)."""

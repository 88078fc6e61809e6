"""Workloads from outside the project, for their tests (docs/own-model.md)."""

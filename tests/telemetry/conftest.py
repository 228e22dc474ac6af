"""Fixtures of the telemetry tests: the run tests' signed-in caller."""

from __future__ import annotations

from tests.runs.conftest import alice

__all__ = ["alice"]

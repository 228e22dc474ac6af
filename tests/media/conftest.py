"""Fixtures of the media tests that run agents: the run tests' signed-in caller and direct reads of what a
run stored (:mod:`tests.support.run_fixtures`)."""

from __future__ import annotations

from tests.support.run_fixtures import alice, stored

__all__ = ["alice", "stored"]

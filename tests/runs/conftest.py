"""The run tests' fixtures, for every room under ``tests/runs/``: a signed-in caller (``alice``), direct
reads of what a run stored (``stored``), Iris on a real socket with a slow local model (``base_url``) and a
database that refuses chosen runs' commits (``doomed_commits``); they live in
:mod:`tests.support.run_fixtures`."""

from __future__ import annotations

from tests.support.run_fixtures import alice, base_url, doomed_commits, stored

__all__ = ["alice", "base_url", "doomed_commits", "stored"]

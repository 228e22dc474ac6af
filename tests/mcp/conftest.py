"""Fixtures of the MCP tests that run agents: the run tests' signed-in caller and direct reads of what a
run stored (:mod:`tests.support.run_fixtures`), and the folder the test MCP server writes its marks into
(:mod:`tests.support.mcp_servers`)."""

from __future__ import annotations

from tests.support.mcp_servers import marks
from tests.support.run_fixtures import alice, stored

__all__ = ["alice", "marks", "stored"]

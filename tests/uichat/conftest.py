"""Iris on a real socket with the test MCP server's tools, for the AI SDK's ``useChat`` surface."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.gateway.conftest import gateway
from tests.support.http_server import serve_asgi
from tests.support.mcp_servers import stdio_entry
from tests.support.npm import npm_install
from tests.support.ui_chat import FLOW, user_token
from tests.support.waits import REQUEST_SECONDS

__all__ = ["gateway"]


@pytest.fixture(scope="module")
def ai(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp dir with the ``ai`` package and the flow script."""
    where = npm_install(tmp_path_factory, "ui-chat", "ai")
    shutil.copy(FLOW, where / FLOW.name)
    return where


@pytest.fixture
def iris(settings: Settings, tmp_path: Path) -> Iterator[str]:
    """Iris's base URL; the default agent has every ``charts`` tool (``wipe`` asks first)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    with serve_asgi(create_app(settings, environ={"MARKS": str(marks)}), lifespan="on") as base:
        admin = {"Authorization": f"Bearer {user_token('root', role='admin')}"}
        entry = {**stdio_entry("charts", marks), "env": {"MARK_DIR": "${MARKS}"}, "connectTimeoutSeconds": 60}
        created = httpx.post(f"{base}/api/mcp-servers", json=entry, headers=admin, timeout=REQUEST_SECONDS)
        assert created.status_code == 201, created.text
        tools = {"tools": ["mcp:charts/*"]}
        changed = httpx.patch(
            f"{base}/api/agents/default", json=tools, headers=admin, timeout=REQUEST_SECONDS
        )
        assert changed.status_code == 200, changed.text
        yield base

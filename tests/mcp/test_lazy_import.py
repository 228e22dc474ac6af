"""The MCP SDK (~47 MiB resident with its generated protocol types) is imported only once a process
connects to an MCP server, on a thread (app/mcp/pool.py): a process without MCP servers never holds it.
Checked in a fresh interpreter, since this test process has imported it long ago."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import JWT_SECRET
from tests.support.fresh_interpreter import run_fresh
from tests.support.mcp_servers import stdio_entry

SCRIPT = """
import json, sys
from litestar.testing import TestClient
from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings

data_dir, database_url, secret, entry = sys.argv[1:5]
admin = {"Authorization": f"Bearer {issue_token(secret, 'root', role='admin')}"}
seen = {}
settings = Settings(data_dir=data_dir, database_url=database_url, jwt_secret=secret)
with TestClient(create_app(settings)) as client:
    assert client.get("/api/tools", headers=admin).status_code == 200
    run = {"threadId": "t-1", "runId": "r-1", "messages": [{"id": "m-1", "role": "user", "content": "hi"}],
           "tools": [], "context": [], "state": {}, "forwardedProps": {}}
    assert client.post("/agent/runs", json=run, headers=admin).status_code == 200
    seen["before"] = "mcp" in sys.modules or "mcp_types" in sys.modules
    created = client.post("/api/mcp-servers", json=json.loads(entry), headers=admin)
    assert created.status_code == 201, created.text
    listed = client.get("/api/tools", headers=admin)
    assert listed.status_code == 200, listed.text
    seen["tools"] = sorted(t["source"] + " " + t["name"] for t in listed.json()["tools"])
    seen["after"] = "mcp" in sys.modules
print(json.dumps(seen))
"""


def test_the_mcp_sdk_is_imported_only_when_a_server_is_used(database_url: str, tmp_path: Path) -> None:
    (tmp_path / "marks").mkdir()
    entry = json.dumps(stdio_entry("lazy", tmp_path / "marks"))
    printed = run_fresh(SCRIPT, str(tmp_path / "data"), database_url, JWT_SECRET, entry)
    seen = json.loads(printed.strip().splitlines()[-1])
    assert seen["before"] is False  # tools listed and a run answered: no MCP server, no MCP SDK
    assert "mcp:lazy lazy__stats" in seen["tools"], seen  # the server's tools, listed through the SDK
    assert seen["after"] is True

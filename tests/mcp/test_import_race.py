"""The MCP SDK's first import (app/mcp/pool.py) is one import that every first use awaits: several first
uses racing in a fresh process all get the whole module, never the half-imported one ``sys.modules``
holds while the import runs. Checked in a fresh interpreter, since this test process imported it long ago."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import JWT_SECRET
from tests.support.fresh_interpreter import run_fresh
from tests.support.mcp_servers import stdio_entry

SCRIPT = """
import asyncio, json, sys
from litestar.testing import AsyncTestClient
from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings

data_dir, database_url, secret, entries = sys.argv[1:5]
admin = {"Authorization": f"Bearer {issue_token(secret, 'root', role='admin')}"}


async def main() -> None:
    settings = Settings(data_dir=data_dir, database_url=database_url, jwt_secret=secret)
    async with AsyncTestClient(create_app(settings)) as client:
        for entry in json.loads(entries):
            created = await client.post("/api/mcp-servers", json=entry, headers=admin)
            assert created.status_code == 201, created.text
        assert "iris.app.mcp.connection" not in sys.modules

        async def first_use(delay: float):
            await asyncio.sleep(delay)  # later ones arrive while the first is importing
            return await client.get("/api/tools", headers=admin)

        answers = await asyncio.gather(*(first_use(i * 0.02) for i in range(3)))
        print(json.dumps([[a.status_code, a.text[:300]] for a in answers]))


asyncio.run(main())
"""


def test_racing_first_uses_of_mcp_share_one_import(database_url: str, tmp_path: Path) -> None:
    (tmp_path / "marks").mkdir()
    entries = json.dumps([stdio_entry(name, tmp_path / "marks") for name in ("race_a", "race_b")])
    printed = run_fresh(SCRIPT, str(tmp_path / "data"), database_url, JWT_SECRET, entries)
    answers = json.loads(printed.strip().splitlines()[-1])
    assert [status for status, _ in answers] == [200] * len(answers), answers

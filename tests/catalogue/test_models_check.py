"""``python -m iris models check`` against loopback vendor fakes: one healthy, one refusing the key."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable

from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.persistence.migrations import REPO_ROOT
from iris.app.settings import Settings
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.waits import SUBPROCESS_SECONDS

OPENAI_KEY = "sk-good-key-123"
WRONG_ANTHROPIC_KEY = "sk-ant-wrong-456"


async def test_one_healthy_one_with_a_wrong_key(
    client: AsyncTestClient[Litestar], settings: Settings, auth: Callable[..., dict[str, str]]
) -> None:
    openai, anthropic = FakeOpenAI(api_key=OPENAI_KEY), FakeAnthropic(api_key="sk-ant-the-right-one")
    openai.text("o", "k")
    with serve_asgi(openai.app) as openai_url, serve_asgi(anthropic.app) as anthropic_url:
        for body in (
            {
                "name": "GPT",
                "provider": "openai",
                "modelId": "gpt-4o",
                "type": "vision",
                "options": {"baseUrl": f"{openai_url}/v1"},
            },
            {
                "name": "Claude",
                "provider": "anthropic",
                "modelId": "claude-x",
                "type": "text",
                "options": {"baseUrl": anthropic_url},
            },
        ):
            created = await client.post("/api/models", json=body, headers=auth("root", "admin"))
            assert created.status_code == 201, created.text
        env = {
            "PATH": os.environ.get("PATH", ""),
            "IRIS_DATA_DIR": settings.data_dir,
            "IRIS_DATABASE_URL": settings.effective_database_url,
            "OPENAI_API_KEY": OPENAI_KEY,
            "ANTHROPIC_API_KEY": WRONG_ANTHROPIC_KEY,
        }
        checked = await asyncio.to_thread(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "iris",
                "models",
                "check",
                "openai/gpt-4o",
                "anthropic/claude-x",
                "local/text",
            ],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=SUBPROCESS_SECONDS,
        )

    assert checked.returncode == 1, checked.stderr
    lines = checked.stdout.splitlines()
    assert "[1/3] openai/gpt-4o: ok" in lines
    assert "[2/3] anthropic/claude-x: FAILED provider_auth" in lines
    table = lines[lines.index("") + 1 :]
    assert table[0].split() == ["model", "result", "first", "token", "error"]
    rows = {line.split()[0]: line for line in table[2:]}
    assert set(rows) == {"openai/gpt-4o", "anthropic/claude-x", "local/text"}
    assert rows["openai/gpt-4o"].split()[1:4][0] == "ok"
    assert rows["openai/gpt-4o"].split()[3] == "ms"
    assert "failed" in rows["anthropic/claude-x"]
    assert "provider_auth: check ANTHROPIC_API_KEY" in rows["anthropic/claude-x"]
    assert rows["local/text"].split()[1] == "ok"
    assert WRONG_ANTHROPIC_KEY not in checked.stdout + checked.stderr
    # The vision model got the text prompt and a real PNG; the text model text only.
    [sent] = openai.requests
    image = sent.json["messages"][0]["content"][1]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert [r.path for r in anthropic.requests] == ["/v1/messages"]


async def test_an_unknown_model_is_a_failed_row(settings: Settings) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
    }
    checked = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "iris", "models", "check", "openai/nope"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )
    assert checked.returncode == 1
    assert "model_not_found" in checked.stdout

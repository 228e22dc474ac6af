"""No request pays for an import (issue 27, defect 1): the providers load off the event loop at start-up.

A fresh ``python -m iris serve`` (nothing imported before it started; LiteLLM's import takes seconds)
is asked for ``GET /api/providers`` first, with a ``/healthz`` probe going beside it, then the model
list, and a first LiteLLM run (LiteLLM imports about a second more on its first completion). The
server's own loop monitor (``GET /debug/loop``, see app/api/loop_monitor.py) must not have seen its
loop blocked for 250 ms or more, and every answer must be whole.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from iris.app.security.auth import issue_token
from tests.conftest import JWT_SECRET
from tests.support.agents import offer
from tests.support.agui import check_stream
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.runs import answer_text, run_input, user_message

STALL_LIMIT_MS = 250.0
BIN = Path(sys.executable).parent


async def _probe(http: httpx.AsyncClient, done: asyncio.Event) -> list[float]:
    """``/healthz`` answer times until ``done``."""
    waits: list[float] = []
    while not done.is_set():
        started = time.monotonic()
        assert (await http.get("/healthz")).status_code == 200
        waits.append(time.monotonic() - started)
        await asyncio.sleep(0.02)
    return waits


@pytest.fixture
def fresh_env(tmp_path: Path) -> dict[str, str]:
    """A migrated data directory, and the environment of a debug server on it."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "IRIS_DATA_DIR": str(tmp_path / "data"),
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_DEBUG": "true",
        "VENDOR_KEY": "sk-litellm-test",
    }
    subprocess.run([str(BIN / "alembic"), "upgrade", "head"], env=env, check=True, capture_output=True)
    return env


async def test_the_first_requests_of_a_fresh_process_never_block_its_loop(
    fresh_env: dict[str, str], tmp_path: Path
) -> None:
    env = fresh_env
    alice = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'alice')}"}
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    vendor = FakeOpenAI(api_key="sk-litellm-test")
    vendor.text("Hello from ", "LiteLLM.")
    with serve_asgi(vendor.app) as vendor_url, iris_process(env, free_port(), tmp_path / "iris.log") as iris:
        async with httpx.AsyncClient(base_url=iris.base_url, timeout=120) as http:
            done = asyncio.Event()
            probe = asyncio.create_task(_probe(http, done))
            try:
                providers = await http.get("/api/providers", headers=alice)
                models = await http.get("/api/models", headers=alice)
                created = await http.post(
                    "/api/models",
                    json={
                        "name": "Through LiteLLM",
                        "provider": "litellm",
                        "modelId": "openai/gpt-4o",
                        "type": "vision",
                        "options": {"baseUrl": f"{vendor_url}/v1", "apiKeyEnv": "VENDOR_KEY"},
                    },
                    headers=admin,
                )
                await offer(http, admin, "litellm/openai/gpt-4o")
                body = run_input("t1", user_message("hi"), model="litellm/openai/gpt-4o")
                ran = await http.post("/agent/runs", json=body, headers=alice)
            finally:
                done.set()
                waits = await probe
            loop = (await http.get("/debug/loop")).json()
        log = iris.output()

    assert providers.status_code == 200, providers.text
    listed = {p["id"] for p in providers.json()["providers"]}
    assert {"local", "openai", "anthropic", "gemini", "ollama", "litellm"} <= listed, providers.text
    assert models.status_code == 200, models.text
    assert created.status_code == 201, created.text
    assert ran.status_code == 200, ran.text
    assert answer_text(check_stream(ran.content)) == "Hello from LiteLLM.", log
    assert waits, "the probe never ran"
    assert loop["maxBlockedMs"] < STALL_LIMIT_MS, (
        f"event loop blocked for {loop['maxBlockedMs']} ms; slowest /healthz {max(waits):.2f} s\n{log}"
    )

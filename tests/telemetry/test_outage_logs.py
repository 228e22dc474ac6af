"""Documented failures log like documented failures (issue 27, defect 6).

A real ``python -m iris serve`` goes through what its operator is told to expect: vendors refusing
(429) and failing (500), and its database gone — the SQLite file held by another process, or the
PostgreSQL server stopped — while a run streams and requests keep coming; then the database is back.
Its output (stderr and stdout, as an operator's log collector sees them) must hold no traceback and
no ERROR line: each of those failures is one WARNING line naming its code and cause, and the keeper
says once that the database went away and once that it came back.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest

from iris.app.security.auth import issue_token
from tests.conftest import JWT_SECRET
from tests.support.agents import offer
from tests.support.agui import check_stream, parse_sse
from tests.support.databases import PostgresDatabases, migrate
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.postgres import TemporaryCluster, free_port
from tests.support.run_fixtures import SLOW_MODEL
from tests.support.runs import run_input, user_message
from tests.support.sqlite_locks import held_by_another_process

OPENAI_KEY = "sk-test-123"
BIN = Path(sys.executable).parent
ADMIN = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
ALICE = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'alice')}"}
ACCESS_LINE = re.compile(r'^INFO: +\S+ - "|uvicorn\.access')
LOG_LINE = re.compile(r"^(?:\d{4}-\d\d-\d\d [\d:,.]+ )?(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b")
"""A log line: the text format (``app/telemetry/logs.py``: time, level, logger) or uvicorn's own."""
Outage = Callable[[], AbstractContextManager[None]]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "IRIS_DATA_DIR": str(tmp_path / "data"),
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PROVIDERS": "local,openai",
        "IRIS_SQLITE_LOCK_TIMEOUT_SECONDS": "1",
        "IRIS_RUN_HEARTBEAT_SECONDS": "0.3",
        "OPENAI_API_KEY": OPENAI_KEY,
        **extra,
    }


@asynccontextmanager
async def served(env: dict[str, str], tmp_path: Path) -> AsyncIterator[tuple[IrisProcess, FakeOpenAI]]:
    """Iris as a process with the slow local model and ``openai/gpt-4o`` on a fake OpenAI."""
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as vendor, iris_process(env, free_port(), tmp_path / "iris.log") as iris:
        async with httpx.AsyncClient(base_url=iris.base_url, timeout=60) as http:
            for model in (
                SLOW_MODEL,
                {
                    "name": "GPT-4o",
                    "provider": "openai",
                    "modelId": "gpt-4o",
                    "type": "vision",
                    "options": {"baseUrl": f"{vendor}/v1"},
                },
            ):
                created = await http.post("/api/models", json=model, headers=ADMIN)
                assert created.status_code == 201, created.text
            await offer(http, ADMIN, "local/slow", "openai/gpt-4o")
        yield iris, fake


async def _scenario(iris: IrisProcess, fake: FakeOpenAI, outage: Outage) -> None:
    async with httpx.AsyncClient(base_url=iris.base_url, timeout=60) as http:
        fake.rate_limited()
        fake.server_error()
        for code in ("provider_rate_limit", "provider_unavailable"):
            body = run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o")
            events = check_stream((await http.post("/agent/runs", json=body, headers=ALICE)).content)
            assert (events[-1]["type"], events[-1].get("code")) == ("RUN_ERROR", code)

        words = " ".join(f"w{i}" for i in range(200))
        body = run_input(str(uuid.uuid4()), user_message(words), model="local/slow")
        async with http.stream("POST", "/agent/runs", json=body, headers=ALICE) as response:
            chunks = response.aiter_bytes()
            seen = b""
            async for chunk in chunks:
                seen += chunk
                if seen.count(b"TEXT_MESSAGE_CONTENT") >= 3:
                    break
            with outage():
                seen += b"".join([chunk async for chunk in chunks])
                assert parse_sse(seen)[-1].data.get("code") == "database_unavailable"
                refused = [
                    await http.post("/agent/runs", json=run_input("t2", user_message("x")), headers=ALICE),
                    await http.post("/api/agents/default/chat", json={"content": "hi"}, headers=ALICE),
                    await http.post(
                        "/api/files",
                        files={"file": ("g.png", image_bytes("PNG", (16, 16), (9, 9, 9)), "image/png")},
                        data={"threadId": "t3"},
                        headers=ALICE,
                    ),
                ]
                assert [r.status_code for r in refused] == [503, 503, 503]
                await asyncio.sleep(1.5)  # the keeper fails a few beats meanwhile
        for _ in range(300):  # back: the heartbeat records the run's ending, and the keeper says so
            if "the database is available again" in iris.output():
                break
            await asyncio.sleep(0.1)


def _check_log(output: str) -> None:
    """No traceback, no ERROR; one WARNING line per documented failure, with its code and cause."""
    assert "Traceback" not in output, output
    lines = [
        (match.group(1), line)
        for line in output.splitlines()
        if (match := LOG_LINE.match(line)) and not ACCESS_LINE.search(line)
    ]
    assert not [line for level, line in lines if level in ("ERROR", "CRITICAL")], output
    warnings = [line for level, line in lines if level == "WARNING"]
    runs = [w for w in warnings if re.search(r"iris\.runs:? .*run \S+ failed: ", w)]
    assert len(runs) == 3, output
    rate_limited = r"failed: provider_rate_limit: openai rate_limit \(HTTP 429\): .*Rate limit reached"
    assert re.search(rate_limited, runs[0])
    assert re.search(r"failed: provider_unavailable: openai unavailable \(HTTP 500\): ", runs[1])
    assert "failed: database_unavailable: " in runs[2]
    refused = [w for w in warnings if "503 database_unavailable: " in w]
    assert [re.search(r"(\S+ /\S*): 503 database_unavailable: ", w).group(1) for w in refused] == [  # type: ignore[union-attr]
        "POST /agent/runs",
        "POST /api/agents/default/chat",
        "POST /api/files",
    ], output
    keeper = [w for w in warnings if "run keeper: database_unavailable: " in w]
    assert len(keeper) == 1, output
    assert "run keeper: the database is available again" in output
    for line in warnings:
        assert "[SQL:" not in line, line  # the cause, not the statement or its parameters
    assert not re.search(r"^\s+File \"", output, re.MULTILINE), output


@pytest.fixture
def sqlite_env(tmp_path: Path) -> dict[str, str]:
    """The settings of a process on a migrated SQLite file of its own."""
    env = _env(tmp_path)
    subprocess.run([str(BIN / "alembic"), "upgrade", "head"], env=env, check=True, capture_output=True)
    return env


async def test_a_locked_sqlite_file_and_vendor_errors_log_one_warning_each(
    sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    env = sqlite_env
    path = str(tmp_path / "data" / "iris.db")

    @contextmanager
    def locked() -> Iterator[None]:
        with held_by_another_process(path):
            yield

    async with served(env, tmp_path) as (iris, fake):
        await _scenario(iris, fake, locked)
        output = iris.output()
    _check_log(output)


@pytest.fixture
def cluster() -> Iterator[TemporaryCluster]:
    """A PostgreSQL server of this test alone: it gets stopped."""
    reason = TemporaryCluster.unavailable_reason()
    if reason:
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    cluster = TemporaryCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(cluster: TemporaryCluster) -> str:
    databases = PostgresDatabases(f"postgresql+asyncpg://postgres@127.0.0.1:{cluster.port}/postgres")
    url = databases.url_for(databases.create())
    migrate(url)
    return url


async def test_a_stopped_postgresql_and_vendor_errors_log_one_warning_each(
    cluster: TemporaryCluster, postgres_url: str, tmp_path: Path
) -> None:
    @contextmanager
    def stopped() -> Iterator[None]:
        cluster.halt()
        try:
            yield
        finally:
            cluster.resume()

    async with served(_env(tmp_path, IRIS_DATABASE_URL=postgres_url), tmp_path) as (iris, fake):
        await _scenario(iris, fake, stopped)
        output = iris.output()
    _check_log(output)

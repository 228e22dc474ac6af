"""API keys on two Iris processes sharing one PostgreSQL database: a key made on one works on the
other, a key revoked on one is refused by both within 5 s, and a key's rate limit holds over both."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.postgres import free_port
from tests.support.waits import REQUEST_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["postgresql"], indirect=True)]


@pytest.fixture
def workers(settings: Settings, tmp_path: Path) -> Iterator[tuple[IrisProcess, IrisProcess]]:
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
    }
    port_a, port_b = free_port(), free_port()
    with (
        iris_process(
            {**env, "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port_a}"}, port_a, tmp_path / "a.log"
        ) as a,
        iris_process(
            {**env, "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port_b}"}, port_b, tmp_path / "b.log"
        ) as b,
    ):
        yield a, b


def _status(process: IrisProcess, key: str, path: str = "/api/models") -> tuple[int, str]:
    response = httpx.get(f"{process.base_url}{path}", headers={"x-api-key": key}, timeout=REQUEST_SECONDS)
    return response.status_code, "" if response.status_code == 200 else response.json()["code"]


def test_revocation_reaches_both_processes_within_five_seconds(
    workers: tuple[IrisProcess, IrisProcess], auth: Callable[..., dict[str, str]]
) -> None:
    a, b = workers
    made = httpx.post(
        f"{a.base_url}/api/keys", json={"name": "ci"}, headers=auth("alice"), timeout=REQUEST_SECONDS
    ).json()
    key = made["key"]
    assert _status(a, key) == (200, "")
    assert _status(b, key) == (200, "")  # both processes now remember the key as good
    scoped = httpx.post(
        f"{b.base_url}/api/keys",
        json={"name": "v1 only", "scopes": {"surfaces": ["openai"]}},
        headers=auth("alice"),
        timeout=REQUEST_SECONDS,
    ).json()["key"]
    assert _status(a, scoped) == (403, "key_surface_forbidden")
    assert _status(a, scoped, "/v1/models") == (200, "")

    revoked = httpx.delete(
        f"{b.base_url}/api/keys/{made['id']}", headers=auth("alice"), timeout=REQUEST_SECONDS
    )
    assert revoked.status_code == 204
    revoked_at = time.monotonic()
    refused: dict[str, float] = {}
    while len(refused) < 2 and time.monotonic() - revoked_at < REQUEST_SECONDS:
        for name, process in (("a", a), ("b", b)):
            if name not in refused and _status(process, key) == (401, "invalid_api_key"):
                refused[name] = time.monotonic() - revoked_at
        time.sleep(0.1)
    assert set(refused) == {"a", "b"}
    assert max(refused.values()) < 5.0, refused


def test_a_keys_rate_limit_holds_across_both_processes(
    workers: tuple[IrisProcess, IrisProcess], auth: Callable[..., dict[str, str]]
) -> None:
    a, b = workers
    if time.time() % 60 > 45:  # limits count in fixed minutes: start well inside one
        time.sleep(61 - time.time() % 60)
    made = httpx.post(
        f"{a.base_url}/api/keys",
        json={"name": "ci", "requestsPerMinute": 10},
        headers=auth("alice"),
        timeout=REQUEST_SECONDS,
    ).json()

    def one(process: IrisProcess) -> int:
        return _status(process, made["key"])[0]

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(one, [a, b] * 15))
    assert answers.count(200) == 10, answers
    assert answers.count(429) == 20

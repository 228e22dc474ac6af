"""Two Iris worker processes sharing one database and one ``PROMETHEUS_MULTIPROC_DIR``: a scrape of
either answers for both, and a worker killed mid-run leaves its counts but not its active runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.agents import offer_sync
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.metrics import parse, value
from tests.support.postgres import free_port
from tests.support.run_fixtures import SLOW_MODEL
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS, until

pytestmark = pytest.mark.slow


@pytest.fixture
def workers(
    settings: Settings, tmp_path: Path, auth: Callable[..., dict[str, str]]
) -> Iterator[tuple[IrisProcess, IrisProcess]]:
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "PROMETHEUS_MULTIPROC_DIR": str(shared),
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
        admin = auth("root", role="admin")
        created = httpx.post(
            f"{a.base_url}/api/models", json=SLOW_MODEL, headers=admin, timeout=REQUEST_SECONDS
        )
        assert created.status_code == 201, created.text
        offer_sync(a.base_url, admin, "local/slow")
        yield a, b


def scrape(
    process: IrisProcess, admin: dict[str, str]
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = httpx.get(f"{process.base_url}/metrics", headers=admin, timeout=REQUEST_SECONDS)
    assert response.status_code == 200, response.text
    return parse(response.text)


def test_either_worker_answers_a_scrape_for_both(
    workers: tuple[IrisProcess, IrisProcess], auth: Callable[..., dict[str, str]]
) -> None:
    a, b = workers
    admin, alice = auth("root", role="admin"), auth("alice")
    for process, count in ((a, 2), (b, 3)):
        for _ in range(count):
            body = run_input(str(uuid.uuid4()), user_message("hello"))
            answered = httpx.post(
                f"{process.base_url}/agent/runs", json=body, headers=alice, timeout=REQUEST_SECONDS
            )
            assert answered.status_code == 200
            assert b"RUN_FINISHED" in answered.content
    for process in (a, b):
        samples = scrape(process, admin)
        assert value(samples, "iris_runs_started_total", model="local/vision") == 5
        assert value(samples, "iris_runs_finished_total", model="local/vision", outcome="success") == 5
        assert value(samples, "iris_http_requests_total", path="/agent/runs", status_code="200") == 5
        assert value(samples, "iris_active_runs") == 0


def test_a_killed_worker_keeps_its_counts_but_not_its_active_runs(
    workers: tuple[IrisProcess, IrisProcess], auth: Callable[..., dict[str, str]]
) -> None:
    a, b = workers
    admin, alice = auth("root", role="admin"), auth("alice")
    words = " ".join(f"w{i}" for i in range(400))  # 40 ms a word: a run that is still going when killed
    body = run_input(str(uuid.uuid4()), user_message(words), model="local/slow")
    with (
        httpx.Client(base_url=b.base_url, timeout=REQUEST_SECONDS) as client,
        client.stream("POST", "/agent/runs", json=body, headers=alice) as response,
    ):
        assert response.status_code == 200
        for chunk in response.iter_bytes():
            if b"TEXT_MESSAGE_CONTENT" in chunk:
                break
        until(
            lambda: value(scrape(a, admin), "iris_active_runs") == 1,
            within=REQUEST_SECONDS,
            what="the run going on B shows as active on A",
        )
        b.kill()
    samples = scrape(a, admin)
    assert value(samples, "iris_active_runs") == 0
    assert value(samples, "iris_runs_started_total", model="local/slow") == 1

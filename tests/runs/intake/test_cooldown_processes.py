"""A cool-down shared by two real ``python -m iris serve`` processes on one database (issue 23's
acceptance): runs on A fail over until OpenAI's loopback fake, answering 503, has cooled
``openai/gpt-4o`` down; a run on B then never asks that model and says so in ``iris/attempts``; once the
cool-down has run out, B tries the model again."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.agents import offer_sync
from tests.support.agui import check_stream
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.postgres import free_port
from tests.support.runs import answer_text, of_type, run_input, user_message
from tests.support.waits import REQUEST_SECONDS, until

pytestmark = pytest.mark.slow

OPENAI_KEY = "sk-test-123"
GPT = "openai/gpt-4o"
FALLBACK = "local/vision"
COOLDOWN_SECONDS = 10
"""Long enough that B's run, right after A cooled the model down, surely comes before the end on a
loaded machine; short enough to wait for the end."""


def overloaded(fake: FakeOpenAI) -> None:
    fake.error(503, "The engine is currently overloaded.", type_="server_error")


@pytest.fixture
def vendor() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
def processes(
    settings: Settings,
    tmp_path: Path,
    vendor: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
) -> Iterator[tuple[IrisProcess, IrisProcess]]:
    """A and B on the test's database (a SQLite file, or PostgreSQL), where two failures within the
    cool-down period cool a model down; ``openai/gpt-4o`` (on the fake, falling back to
    ``local/vision``) added and offered through A."""
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_COOLDOWN_FAILURES": "2",
        "IRIS_COOLDOWN_SECONDS": str(COOLDOWN_SECONDS),
        "OPENAI_API_KEY": OPENAI_KEY,
    }
    port_a, port_b = free_port(), free_port()
    public = "IRIS_PUBLIC_URL"
    with (
        iris_process({**env, public: f"http://127.0.0.1:{port_a}"}, port_a, tmp_path / "a.log") as a,
        iris_process({**env, public: f"http://127.0.0.1:{port_b}"}, port_b, tmp_path / "b.log") as b,
    ):
        admin = auth("root", role="admin")
        model = {
            "name": "GPT",
            "provider": "openai",
            "modelId": "gpt-4o",
            "type": "vision",
            "options": {"baseUrl": vendor[1] + "/v1"},
            "fallbacks": [FALLBACK],
            "retryAttempts": 1,
        }
        created = httpx.post(f"{a.base_url}/api/models", json=model, headers=admin, timeout=REQUEST_SECONDS)
        assert created.status_code == 201, created.text
        offer_sync(a.base_url, admin, GPT)
        yield a, b


def run_on(process: IrisProcess, user: dict[str, str]) -> list[dict[str, Any]]:
    body = run_input(str(uuid.uuid4()), user_message("hi"), model=GPT)
    answered = httpx.post(f"{process.base_url}/agent/runs", json=body, headers=user, timeout=REQUEST_SECONDS)
    assert answered.status_code == 200, answered.text
    events = check_stream(answered.content)
    assert not of_type(events, "RUN_ERROR"), events
    return events


def metadata(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (event,) = of_type(events, kind)
    found: dict[str, Any] = event["metadata"]
    return found


def cooling(process: IrisProcess, admin: dict[str, str]) -> list[str]:
    """The refs ``process`` lists as cooling down now (each for the 503s it answered)."""
    listed = httpx.get(f"{process.base_url}/api/models/cooldowns", headers=admin, timeout=REQUEST_SECONDS)
    assert listed.status_code == 200, listed.text
    entries = listed.json()["cooldowns"]
    assert {entry["lastCode"] for entry in entries} <= {"provider_unavailable"}
    return [entry["ref"] for entry in entries]


def test_a_model_cooled_down_by_one_process_is_skipped_by_another_until_it_expires(
    processes: tuple[IrisProcess, IrisProcess],
    vendor: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
) -> None:
    a, b = processes
    fake, _ = vendor
    admin, alice = auth("root", role="admin"), auth("alice")

    for _ in range(6):  # two failures within the period cool it down: two runs, more if A is slow
        overloaded(fake)
        events = run_on(a, alice)
        assert metadata(events, "RUN_FINISHED")["iris/model"] == FALLBACK
        assert metadata(events, "RUN_FINISHED")["iris/attempts"] == [
            {"model": GPT, "code": "provider_unavailable"}
        ]
        if cooling(a, admin) == [GPT]:
            break
    else:
        pytest.fail(f"{GPT} was never cooled down:\n{a.output()}")
    asked = len(fake.requests)

    assert cooling(b, admin) == [GPT]  # read from the shared database
    events = run_on(b, alice)
    assert len(fake.requests) == asked  # B never asked the cooled-down model
    skipped = [{"model": GPT, "code": "model_cooling_down"}]
    assert metadata(events, "RUN_STARTED")["iris/model"] == FALLBACK
    assert metadata(events, "RUN_STARTED")["iris/attempts"] == skipped
    assert metadata(events, "RUN_FINISHED")["iris/model"] == FALLBACK
    assert metadata(events, "RUN_FINISHED")["iris/attempts"] == skipped
    assert answer_text(events)

    until(
        lambda: cooling(b, admin) == [],
        within=COOLDOWN_SECONDS + REQUEST_SECONDS,
        what=f"{GPT}'s cool-down ending",
        every=0.25,
    )
    fake.text("Back ", "again.")
    events = run_on(b, alice)
    assert len(fake.requests) == asked + 1  # tried again
    assert answer_text(events) == "Back again."
    assert metadata(events, "RUN_STARTED")["iris/model"] == GPT
    assert "iris/attempts" not in metadata(events, "RUN_STARTED")
    assert metadata(events, "RUN_FINISHED")["iris/model"] == GPT
    assert "iris/attempts" not in metadata(events, "RUN_FINISHED")

"""An operator sees and ends cool-downs: ``GET /api/models/cooldowns`` lists the models cooling down,
``DELETE /api/models/{modelId}/cooldown`` ends one (the next run tries the model again); both are for
admins only, on a real database and OpenAI's loopback fake."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest

from iris.app.settings import Settings
from tests.support.fake_openai import FakeOpenAI
from tests.support.fallbacks import GPT, OPENAI_KEY, Client, finished, iris, started_on
from tests.support.http_server import serve_asgi
from tests.support.runs import of_type, run, run_input, user_message


@pytest.fixture
def vendor() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
def root(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


def cooling(settings: Settings) -> Settings:
    """Two failures within ten minutes cool a model down for ten minutes."""
    return msgspec.structs.replace(settings, cooldown_failures=2, cooldown_seconds=600)


async def listed(client: Client, admin: dict[str, str]) -> list[dict[str, Any]]:
    response = await client.get("/api/models/cooldowns", headers=admin)
    assert response.status_code == 200, response.text
    entries: list[dict[str, Any]] = response.json()["cooldowns"]
    return entries


async def gpt_id(client: Client, admin: dict[str, str]) -> str:
    models = (await client.get("/api/models", headers=admin)).json()["models"]
    return str(next(m["id"] for m in models if m["ref"] == GPT))


async def cool_gpt_down(client: Client, fake: FakeOpenAI, user: dict[str, str]) -> None:
    """One run whose two tries of GPT fail (the second cools it down); the fallback answers."""
    fake.server_error()
    fake.server_error()
    events = await run(client, user, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert finished(events)["iris/model"] == "local/vision"


async def test_a_cooled_down_model_is_listed_and_ending_it_gets_it_tried_again(
    settings: Settings, vendor: tuple[FakeOpenAI, str], root: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = vendor
    async with iris(cooling(settings), base, root, fallbacks=["local/vision"]) as client:
        assert await listed(client, root) == []
        await cool_gpt_down(client, fake, alice)
        (entry,) = await listed(client, root)
        assert entry["ref"] == GPT
        assert entry["id"] == await gpt_id(client, root)
        assert entry["failures"] == 0
        assert entry["lastCode"] == "provider_unavailable"
        since, until = (dt.datetime.fromisoformat(entry[k]) for k in ("since", "until"))
        assert since.tzinfo is not None
        assert until - since == dt.timedelta(seconds=600)

        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
        assert started_on(events) == "local/vision"  # skipped while cooling down
        assert len(fake.requests) == 2

        ended = await client.delete(f"/api/models/{entry['id']}/cooldown", headers=root)
        assert ended.status_code == 204, ended.text
        assert await listed(client, root) == []

        fake.text("Back ", "again.")
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert len(fake.requests) == 3  # the cleared model was tried on the next run
    assert started_on(events) == GPT
    assert finished(events).get("iris/attempts") is None
    assert finished(events)["iris/model"] == GPT
    assert not of_type(events, "RUN_ERROR")


async def test_ending_a_cool_down_of_a_model_that_has_none_is_204(
    settings: Settings, vendor: tuple[FakeOpenAI, str], root: dict[str, str]
) -> None:
    _, base = vendor
    async with iris(cooling(settings), base, root, fallbacks=["local/vision"]) as client:
        ended = await client.delete(f"/api/models/{await gpt_id(client, root)}/cooldown", headers=root)
        assert ended.status_code == 204, ended.text
        assert ended.content == b""


@pytest.mark.parametrize("model_id", [str(uuid.uuid4()), "not-a-uuid"])
async def test_ending_the_cool_down_of_an_unknown_model_is_404(
    settings: Settings, vendor: tuple[FakeOpenAI, str], root: dict[str, str], model_id: str
) -> None:
    _, base = vendor
    async with iris(cooling(settings), base, root, fallbacks=["local/vision"]) as client:
        ended = await client.delete(f"/api/models/{model_id}/cooldown", headers=root)
    assert ended.status_code == 404
    assert ended.headers["content-type"].startswith("application/problem+json")
    assert ended.json()["code"] == "model_not_found"


async def test_only_admins_see_or_end_cool_downs(
    settings: Settings, vendor: tuple[FakeOpenAI, str], root: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = vendor
    async with iris(cooling(settings), base, root, fallbacks=["local/vision"]) as client:
        await cool_gpt_down(client, fake, alice)
        seen = await client.get("/api/models/cooldowns", headers=alice)
        ended = await client.delete(f"/api/models/{await gpt_id(client, root)}/cooldown", headers=alice)
        for refused in (seen, ended):
            assert refused.status_code == 403, refused.text
            assert refused.json()["code"] == "admin_required"
        assert [entry["ref"] for entry in await listed(client, root)] == [GPT]  # still cooling down

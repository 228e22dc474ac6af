"""Each vendor's connection goes back to the pool after an answer: N streamed answers, one TCP connection.

A provider that leaves ``async with http.stream(...)`` at the vendor's end-of-answer marker without
reading the rest of the body makes httpx close the connection; the next request then pays a new TCP (and,
against a real vendor, TLS) handshake. The fakes stand behind a counter of the connections they accept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from iris.providers import ModelSpec, Provider, ProviderContext, RequestOptions
from iris.providers.anthropic import create as anthropic
from iris.providers.events import Finish
from iris.providers.gemini import create as gemini
from iris.providers.ollama import create as ollama
from iris.providers.openai import create as openai
from tests.providers.helpers import HI, KEY, collect
from tests.support import fake_anthropic, fake_gemini
from tests.support.asgi import ConnectionCounter
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi

ANSWERS = 4


def _openai(base: str, http: httpx.AsyncClient) -> tuple[Provider, ModelSpec]:
    context = ProviderContext(environ={"OPENAI_API_KEY": KEY}, http=http)
    model = ModelSpec(provider="openai", type="text", model_id="gpt-4o", options={"baseUrl": f"{base}/v1"})
    return openai(context), model


def _anthropic(base: str, http: httpx.AsyncClient) -> tuple[Provider, ModelSpec]:
    context = ProviderContext(environ={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": base}, http=http)
    return anthropic(context), ModelSpec(provider="anthropic", type="text", model_id="claude-sonnet-4-5")


def _gemini(base: str, http: httpx.AsyncClient) -> tuple[Provider, ModelSpec]:
    context = ProviderContext(environ={"GEMINI_API_KEY": KEY, "GEMINI_BASE_URL": base}, http=http)
    return gemini(context), ModelSpec(provider="gemini", type="text", model_id="gemini-2.5-flash")


def _ollama(base: str, http: httpx.AsyncClient) -> tuple[Provider, ModelSpec]:
    context = ProviderContext(environ={}, http=http)
    return ollama(context), ModelSpec(
        provider="ollama", type="text", model_id="llava", options={"baseUrl": base}
    )


def _openai_fake() -> tuple[Any, Callable[[], None]]:
    fake = FakeOpenAI(api_key=KEY)
    return fake, lambda: fake.text("Hello ", "there.")


def _anthropic_fake() -> tuple[Any, Callable[[], None]]:
    fake = FakeAnthropic(api_key=KEY)
    return fake, lambda: fake.reply(fake_anthropic.text_answer(["Hello ", "there."]))


def _gemini_fake() -> tuple[Any, Callable[[], None]]:
    fake = FakeGemini(api_key=KEY)
    return fake, lambda: fake.reply(fake_gemini.text_answer(["Hello ", "there."]))


def _ollama_fake() -> tuple[Any, Callable[[], None]]:
    fake = FakeOllama()
    return fake, lambda: fake.text("Hello ", "there.")


VENDORS = {
    "openai": (_openai_fake, _openai),
    "anthropic": (_anthropic_fake, _anthropic),
    "gemini": (_gemini_fake, _gemini),
    "ollama": (_ollama_fake, _ollama),
}


@pytest.mark.parametrize("vendor", sorted(VENDORS))
async def test_sequential_answers_share_one_connection(vendor: str, http: httpx.AsyncClient) -> None:
    make_fake, make_provider = VENDORS[vendor]
    fake, script = make_fake()
    counter = ConnectionCounter(fake.app)
    with serve_asgi(counter) as base:
        provider, model = make_provider(base, http)
        for _ in range(ANSWERS):
            script()
            events = await collect(provider.stream(HI, model, RequestOptions()))
            assert isinstance(events[-1], Finish), events
    assert len(counter.peers) == ANSWERS
    assert counter.connections == 1

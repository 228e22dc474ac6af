"""The OpenAI gateway falls back as runs do: a failing model answered by its fallback (the completion,
and every chunk of a streamed one, names the model that answered), and a fallback that does not honour
the request's knobs skipped."""

from __future__ import annotations

import httpx
import openai
import pytest

from iris.app.security.auth import issue_token
from tests.conftest import JWT_SECRET
from tests.gateway.conftest import Gateway
from tests.support import fake_anthropic as fa
from tests.support.openai_sdk import client
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)


def fall_back_to_claude(gateway: Gateway) -> None:
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    listed = httpx.get(f"{gateway.base}/api/models", headers=admin, timeout=REQUEST_SECONDS).json()["models"]
    gpt = next(m for m in listed if m["ref"] == "openai/gpt-4o")
    patched = httpx.patch(
        f"{gateway.base}/api/models/{gpt['id']}",
        json={"fallbacks": ["anthropic/claude-sonnet-4-5"]},
        headers=admin,
        timeout=REQUEST_SECONDS,
    )
    assert patched.status_code == 200, patched.text


def test_a_failing_model_is_answered_by_its_fallback(gateway: Gateway) -> None:
    fall_back_to_claude(gateway)
    gateway.openai.server_error()
    gateway.anthropic.reply(fa.text_answer(["From ", "Claude."]))
    answer = client(gateway).chat.completions.create(
        model="openai/gpt-4o", messages=[{"role": "user", "content": "Hello"}], temperature=0.3
    )
    assert answer.choices[0].message.content == "From Claude."
    assert answer.model == "anthropic/claude-sonnet-4-5"
    assert len(gateway.openai.requests) == 1
    assert gateway.anthropic.requests[-1].json["temperature"] == 0.3  # the request, built for Claude


def test_every_chunk_of_a_streamed_fallback_answer_names_the_fallback(gateway: Gateway) -> None:
    fall_back_to_claude(gateway)
    gateway.openai.server_error()
    gateway.anthropic.reply(fa.text_answer(["From ", "Claude."]))
    stream = client(gateway).chat.completions.create(
        model="openai/gpt-4o",
        messages=[{"role": "user", "content": "Hello"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "From Claude."
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.model for c in chunks] == ["anthropic/claude-sonnet-4-5"] * len(chunks)
    assert chunks[-1].usage is not None  # the usage chunk names it too
    assert len(gateway.openai.requests) == 1


def test_a_fallback_that_ignores_a_knob_is_skipped(gateway: Gateway) -> None:
    fall_back_to_claude(gateway)
    gateway.openai.server_error()
    with pytest.raises(openai.APIStatusError) as caught:
        client(gateway).chat.completions.create(
            model="openai/gpt-4o", messages=[{"role": "user", "content": "Hello"}], seed=7
        )
    assert caught.value.status_code >= 500
    assert gateway.anthropic.requests == []  # Claude takes no seed: never asked

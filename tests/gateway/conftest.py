"""Iris on a real socket with loopback fakes of OpenAI, Anthropic and Gemini behind it, driven by
clients nobody here wrote (the official ``openai`` SDK, LiteLLM)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import msgspec
import pytest

from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.waits import REQUEST_SECONDS

OPENAI_KEY = "sk-test-123"
ANTHROPIC_KEY = "sk-ant-test-456"
GEMINI_KEY = "AIza-test-789"
RUNS_PER_MINUTE = 6
"""Each test's user gets this many requests a minute (the rate-limit test spends them)."""

MODELS: tuple[tuple[str, str, dict[str, object]], ...] = (
    ("openai", "gpt-4o", {}),
    ("openai", "deepseek-reasoner", {"reasoning": True}),
    ("anthropic", "claude-sonnet-4-5", {}),
    ("gemini", "gemini-2.5-flash", {}),
)


@dataclass
class Gateway:
    base: str
    openai: FakeOpenAI
    anthropic: FakeAnthropic
    gemini: FakeGemini

    @property
    def v1(self) -> str:
        return self.base + "/v1"


def token(user: str) -> str:
    return issue_token(JWT_SECRET, user)


def data_url(fmt: str = "PNG", size: tuple[int, int] = (64, 48)) -> str:
    data = image_bytes(fmt, size)
    return f"data:image/{fmt.lower()};base64,{base64.b64encode(data).decode()}"


@pytest.fixture
def gateway(settings: Settings) -> Iterator[Gateway]:
    """Iris with vendor keys, one catalogue model per fake, and a small per-user run quota."""
    fakes = Gateway("", FakeOpenAI(api_key=OPENAI_KEY), FakeAnthropic(ANTHROPIC_KEY), FakeGemini(GEMINI_KEY))
    environ = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "GEMINI_API_KEY": GEMINI_KEY}
    limited = msgspec.structs.replace(settings, quota_user_runs_per_minute=RUNS_PER_MINUTE)
    with (
        serve_asgi(fakes.openai.app) as openai_base,
        serve_asgi(fakes.anthropic.app) as anthropic_base,
        serve_asgi(fakes.gemini.app) as gemini_base,
        serve_asgi(create_app(limited, environ=environ), lifespan="on") as base,
    ):
        bases = {"openai": openai_base + "/v1", "anthropic": anthropic_base, "gemini": gemini_base}
        admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
        for provider, model_id, options in MODELS:
            body = {
                "name": model_id,
                "provider": provider,
                "modelId": model_id,
                "type": "vision",
                "supportsTools": True,
                "options": {"baseUrl": bases[provider], **options},
            }
            created = httpx.post(f"{base}/api/models", json=body, headers=admin, timeout=REQUEST_SECONDS)
            assert created.status_code == 201, created.text
        fakes.base = base
        yield fakes

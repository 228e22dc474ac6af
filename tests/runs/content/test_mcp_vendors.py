"""An MCP tool's image reaching each vendor's loopback fake in that vendor's own format, the request
bodies checked against the vendors' own SDK types: Anthropic's ``tool_result`` content, Gemini 3's
function response parts, and for Chat Completions, Gemini 2.5 and Ollama the tool message as text plus
a user message after it that carries the image. Wherever it travels, the image is in the run's
``estimatedImageTokens``, by the vendor's own formula."""

from __future__ import annotations

import base64
import io
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as genai
from litestar import Litestar
from litestar.testing import AsyncTestClient
from ollama import Image as OllamaImage
from ollama import Message as OllamaMessage
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from PIL import Image
from pydantic import TypeAdapter

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.agents import offer
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, ToolCallScript
from tests.support.http_server import serve_asgi
from tests.support.mcp_servers import stdio_entry
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, user_message

pytestmark = pytest.mark.slow
Client = AsyncTestClient[Litestar]
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-1", "GEMINI_API_KEY": "gm-1", "OPENAI_API_KEY": "sk-1"}
ARGS = {"values": [5, 1, 3]}


class Fakes:
    def __init__(self) -> None:
        self.anthropic = FakeAnthropic(api_key=KEYS["ANTHROPIC_API_KEY"])
        self.gemini = FakeGemini(api_key=KEYS["GEMINI_API_KEY"])
        self.openai = FakeOpenAI(api_key=KEYS["OPENAI_API_KEY"])
        self.ollama = FakeOllama(model="llava")


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


@pytest.fixture
async def client(
    settings: Settings, fakes: Fakes, tmp_path: Path, stored: Stored, auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    """Iris with one model per fake vendor, and the test MCP server's tools on the default agent."""
    with (
        serve_asgi(fakes.anthropic.app) as anthropic,
        serve_asgi(fakes.gemini.app) as gemini,
        serve_asgi(fakes.openai.app) as openai,
        serve_asgi(fakes.ollama.app) as ollama,
    ):
        async with AsyncTestClient(app=create_app(settings, environ=KEYS)) as test_client:
            admin = auth("root", role="admin")
            for provider, model_id, base in (
                ("anthropic", "claude-sonnet-4-5", anthropic),
                ("gemini", "gemini-3-pro-preview", gemini),
                ("gemini", "gemini-2.5-flash", gemini),
                ("openai", "gpt-4o", openai + "/v1"),
                ("ollama", "llava", ollama),
            ):
                body = {
                    "name": model_id,
                    "provider": provider,
                    "modelId": model_id,
                    "type": "vision",
                    "supportsTools": True,
                    "options": {"baseUrl": base},
                }
                assert (await test_client.post("/api/models", json=body, headers=admin)).status_code == 201
                await offer(test_client, admin, f"{provider}/{model_id}")
            marks = tmp_path / "marks"
            marks.mkdir()
            entry = {**stdio_entry("charts", marks), "connectTimeoutSeconds": 60}
            assert (await test_client.post("/api/mcp-servers", json=entry, headers=admin)).status_code == 201
            await stored.set_agent_tools(["mcp:charts/*"])
            yield test_client


async def chart_run(client: Client, alice: dict[str, str], model: str) -> list[dict[str, Any]]:
    body = run_input(str(uuid.uuid4()), user_message("Chart 5, 1 and 3."), model=model)
    return await run(client, alice, body)


CHART_TOKENS = {
    "anthropic/claude-sonnet-4-5": 205,  # 480 x 320 / 750
    "gemini/gemini-3-pro-preview": 1120,  # per image at the default (high) media resolution
    "gemini/gemini-2.5-flash": 258,  # both sides within 768: one tile
    "openai/gpt-4o": 255,  # 85 + 170 for its one 512-px tile
}
"""What the chart costs each vendor by its published formula (app/media/image_tokens.py)."""


def estimated_image_tokens(events: list[dict[str, Any]]) -> int | None:
    """The run's image estimate: only the chart is an image, and it went with the second request."""
    usage = of_type(events, "RUN_FINISHED")[0]["metadata"]["iris/usage"]
    return usage.get("estimatedImageTokens")  # type: ignore[no-any-return]


def is_chart(data: str) -> None:
    """Base64 of the chart the server drew: a real 480x320 PNG (normalised, never pasted as text)."""
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        assert image.size == (480, 320)


async def test_anthropic_gets_the_image_inside_the_tool_result(
    client: Client, fakes: Fakes, alice: dict[str, str]
) -> None:
    fakes.anthropic.reply(
        [
            fa.message_start(20),
            *fa.tool_block(0, "toolu_1", "charts__chart", [json.dumps(ARGS)]),
            *fa.message_end("tool_use", 9),
        ]
    )
    fakes.anthropic.reply(fa.text_answer(["Three ", "bars."]))
    events = await chart_run(client, alice, "anthropic/claude-sonnet-4-5")
    assert answer_text(events) == "Three bars."
    assert estimated_image_tokens(events) == CHART_TOKENS["anthropic/claude-sonnet-4-5"]

    body = fakes.anthropic.requests[1].json
    TypeAdapter(MessageCreateParamsStreaming).validate_python(body)
    (result,) = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert result["tool_use_id"] == "toolu_1"
    text, image = result["content"]
    assert text["type"] == "text"
    assert "A bar chart of 3 values." in text["text"]
    assert image["type"] == "image"
    assert image["source"]["media_type"] == "image/png"
    is_chart(image["source"]["data"])
    assert body["messages"][-1]["role"] == "user"  # the result is the last turn: no extra message


async def test_gemini_3_gets_the_image_as_function_response_parts(
    client: Client, fakes: Fakes, alice: dict[str, str]
) -> None:
    fakes.gemini.reply([fg.chunk([fg.function_call("charts__chart", ARGS)], finish="STOP")])
    fakes.gemini.reply(fg.text_answer(["Three bars."]))
    events = await chart_run(client, alice, "gemini/gemini-3-pro-preview")
    assert estimated_image_tokens(events) == CHART_TOKENS["gemini/gemini-3-pro-preview"]

    body = fakes.gemini.requests[1].json
    contents = [genai.Content.model_validate(content) for content in body["contents"]]
    response = contents[-1].parts[0].function_response  # type: ignore[index]
    assert response is not None
    assert response.name == "charts__chart"
    (part,) = response.parts or []
    assert part.inline_data is not None
    assert part.inline_data.mime_type == "image/png"
    is_chart(body["contents"][-1]["parts"][0]["functionResponse"]["parts"][0]["inlineData"]["data"])


async def test_gemini_2_5_gets_the_image_in_a_user_turn_after_the_response(
    client: Client, fakes: Fakes, alice: dict[str, str]
) -> None:
    fakes.gemini.reply([fg.chunk([fg.function_call("charts__chart", ARGS)], finish="STOP")])
    fakes.gemini.reply(fg.text_answer(["Three bars."]))
    events = await chart_run(client, alice, "gemini/gemini-2.5-flash")
    assert estimated_image_tokens(events) == CHART_TOKENS["gemini/gemini-2.5-flash"]

    body = fakes.gemini.requests[1].json
    for content in body["contents"]:
        genai.Content.model_validate(content)
    response, follow = body["contents"][-2:]
    assert "parts" not in response["parts"][0]["functionResponse"]
    assert "next message" in response["parts"][0]["functionResponse"]["response"]["output"]
    assert follow["role"] == "user"
    text, image = follow["parts"]
    assert "charts__chart" in text["text"]
    assert image["inlineData"]["mimeType"] == "image/png"
    is_chart(image["inlineData"]["data"])


async def test_chat_completions_get_text_in_the_tool_message_and_the_image_after_it(
    client: Client, fakes: Fakes, alice: dict[str, str]
) -> None:
    fakes.openai.tool_calls(
        [ToolCallScript(id="call_1", name="charts__chart", argument_pieces=[json.dumps(ARGS)])]
    )
    fakes.openai.text("Three bars.")
    events = await chart_run(client, alice, "openai/gpt-4o")
    assert estimated_image_tokens(events) == CHART_TOKENS["openai/gpt-4o"]

    body = fakes.openai.requests[1].json
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
    tool, follow = body["messages"][-2:]
    assert tool["role"] == "tool"
    assert tool["tool_call_id"] == "call_1"
    assert isinstance(tool["content"], str)  # Chat Completions takes no image in a tool message
    assert "[image 1: image/png, 480x320]" in tool["content"]
    assert follow["role"] == "user"
    text, image = follow["content"]
    assert "charts__chart" in text["text"]
    prefix = "data:image/png;base64,"
    assert image["image_url"]["url"].startswith(prefix)
    is_chart(image["image_url"]["url"][len(prefix) :])


async def test_ollama_gets_the_image_in_a_user_message_after_the_tool_message(
    client: Client, fakes: Fakes, alice: dict[str, str]
) -> None:
    fakes.ollama.tool_calls([("charts__chart", ARGS)])
    fakes.ollama.text("Three bars.")
    await chart_run(client, alice, "ollama/llava")

    body = fakes.ollama.requests[1].json
    for message in body["messages"]:  # the client's Image wraps the base64 text it sends
        images = [OllamaImage(value=data) for data in message.get("images", [])]
        OllamaMessage.model_validate({**message, **({"images": images} if images else {})})
    tool, follow = body["messages"][-2:]
    assert tool["role"] == "tool"
    assert "images" not in tool
    assert follow["role"] == "user"
    (image,) = follow["images"]
    is_chart(image)

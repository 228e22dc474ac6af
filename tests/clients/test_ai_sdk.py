"""The Vercel AI SDK under Node against ``/v1`` (skipped, saying why, without Node): ``@ai-sdk/openai``'s
``.chat(id)`` and ``@ai-sdk/openai-compatible``, each with ``generateText`` and ``streamText`` on text, an
image as a data URL and a tool round (call → the SDK runs the tool → answer), usage read back. One Node
process runs every case (the default ``openai(id)``, the Responses API: ``test_ai_sdk_responses``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.fake_openai import ToolCallScript
from tests.support.npm import npm_install
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

FLOW = Path(__file__).with_name("ai_sdk_flow.mjs")
PROVIDERS = ("openai-chat", "compatible")
MODES = ("generate", "stream")


@pytest.fixture(scope="module")
def ai_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(
        tmp_path_factory, "ai-sdk", "ai", "@ai-sdk/openai", "@ai-sdk/openai-compatible", "zod"
    )
    shutil.copy(FLOW, where / FLOW.name)
    return where


def _script(gateway: Gateway) -> None:
    """The vendor's answers, in the order the flow asks: per provider and mode, text, image, tool round."""
    for _ in PROVIDERS:
        for _ in MODES:
            gateway.openai.text("Hello ", "there.", usage=(21, 7))
            gateway.openai.text("A rectangle.", usage=(300, 4))
            gateway.openai.tool_calls(
                [ToolCallScript(id="call_w", name="get_weather", argument_pieces=['{"city":', ' "Paris"}'])],
                usage=(40, 18),
            )
            gateway.openai.text("Sunny in Paris.", usage=(60, 5))


def _run(ai_sdk: Path, gateway: Gateway) -> dict[str, dict[str, Any]]:
    config = {
        "baseURL": gateway.v1,
        "tokens": {
            name: token("ai-sdk-" + name.replace("/", "-"))
            for name in (f"{p}/{m}" for p in PROVIDERS for m in MODES)
        },
        "image": data_url("PNG"),
    }
    done = subprocess.run(
        ["node", FLOW.name, json.dumps(config)],
        cwd=ai_sdk,
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS * 4,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {line["step"]: line for line in map(json.loads, done.stdout.splitlines())}


def test_the_ai_sdk_does_text_images_and_tool_rounds(ai_sdk: Path, gateway: Gateway) -> None:
    _script(gateway)
    steps = _run(ai_sdk, gateway)
    for provider in PROVIDERS:
        for mode in MODES:
            where = f"{provider}/{mode}"
            text, image, tools = (steps[f"{where}/{case}"] for case in ("text", "image", "tools"))
            assert "error" not in text, text
            assert (text["text"], text["finish"], text["usage"]) == (
                "Hello there.",
                "stop",
                {"input": 21, "output": 7},
            )
            assert "error" not in image, image
            assert image["text"] == "A rectangle."
            assert "error" not in tools, tools
            assert tools["calls"] == [{"id": "call_w", "name": "get_weather", "input": {"city": "Paris"}}]
            assert (tools["text"], tools["steps"], tools["finish"]) == ("Sunny in Paris.", 2, "stop")
            assert tools["total"] == {"input": 100, "output": 23}  # both steps' usage

    sent = [r.json for r in gateway.openai.requests]
    assert len(sent) == 16
    images = [p for body in sent for m in body["messages"] for p in m.get("content") or () if _image(p)]
    assert len(images) == 4
    assert all(p["image_url"]["url"].startswith("data:image/") for p in images)
    answers = [body["messages"] for body in sent if body["messages"][-1]["role"] == "tool"]
    assert len(answers) == 4
    for messages in answers:  # the SDK's tool result went back as a tool message for Iris's call id
        assert messages[-1]["tool_call_id"] == "call_w"
        assert json.loads(messages[-1]["content"]) == {"city": "Paris", "sky": "sunny"}


def _image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image_url"

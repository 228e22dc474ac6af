"""The Vercel AI SDK's default ``openai(id)`` model, which speaks the Responses API, under Node against
``/v1/responses`` (skipped, saying why, without Node): ``generateText`` and ``streamText`` on text, an
image as a data URL and a tool round (call → the SDK runs the tool → answer), usage read back. One
Node process runs every case."""

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

FLOW = Path(__file__).with_name("ai_sdk_responses_flow.mjs")
MODES = ("generate", "stream")


@pytest.fixture(scope="module")
def ai_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "ai-sdk-responses", "ai", "@ai-sdk/openai", "zod")
    shutil.copy(FLOW, where / FLOW.name)
    return where


def _run(ai_sdk: Path, gateway: Gateway) -> dict[str, dict[str, Any]]:
    config = {
        "baseURL": gateway.v1,
        "tokens": {mode: token(f"ai-sdk-responses-{mode}") for mode in MODES},
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


def test_openai_id_does_text_images_and_tool_rounds(ai_sdk: Path, gateway: Gateway) -> None:
    for _ in MODES:
        gateway.openai.text("Hello ", "there.", usage=(21, 7))
        gateway.openai.text("A rectangle.", usage=(300, 4))
        gateway.openai.tool_calls(
            [ToolCallScript(id="call_w", name="get_weather", argument_pieces=['{"city":', ' "Paris"}'])]
        )
        gateway.openai.text("Sunny in Paris.", usage=(60, 5))
    steps = _run(ai_sdk, gateway)
    for mode in MODES:
        text, image, tools = (steps[f"{mode}/{case}"] for case in ("text", "image", "tools"))
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
    sent = [r.json["messages"] for r in gateway.openai.requests]
    assert len(sent) == 8
    assert sent[0][0] == {"role": "system", "content": "Be brief."}
    answers = [messages for messages in sent if messages[-1]["role"] == "tool"]
    assert len(answers) == 2
    for messages in answers:  # the SDK's tool result went back as function_call_output for Iris's call id
        assert messages[-1]["tool_call_id"] == "call_w"
        assert json.loads(messages[-1]["content"]) == {"city": "Paris", "sky": "sunny"}

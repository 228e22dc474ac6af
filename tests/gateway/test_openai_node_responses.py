"""The official OpenAI Node SDK's ``client.responses`` under Node against ``/v1/responses`` (skipped,
saying why, without Node): a streamed answer event by event, an image, a function call answered after
``previous_response_id``, the stored response read, listed and deleted, and an error as the SDK's
own class. The stream's final ``Response`` is checked again with the Python SDK's types."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.fake_openai import ToolCallScript
from tests.support.npm import npm_install
from tests.support.responses_types import conforming_response
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

FLOW = Path(__file__).with_name("openai_node_responses_flow.mjs")


@pytest.fixture(scope="module")
def node_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "openai-node-responses", "openai")
    shutil.copy(FLOW, where / FLOW.name)
    return where


def test_the_node_sdk_uses_the_responses_api(node_sdk: Path, gateway: Gateway) -> None:
    fake = gateway.openai
    fake.text("Hello ", "from Node.", usage=(9, 4))
    fake.text("A rectangle.")
    fake.tool_calls([ToolCallScript(id="call_n", name="get_weather", argument_pieces=['{"city":"Paris"}'])])
    fake.text("Sunny.")
    done = subprocess.run(
        ["node", FLOW.name, gateway.v1, token("node-responses"), data_url("PNG")],
        cwd=node_sdk,
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS * 4,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    steps = {line["step"]: line for line in map(json.loads, done.stdout.splitlines())}
    stream = steps["stream"]
    assert stream["types"][:2] == ["response.created", "response.in_progress"]
    assert stream["types"][-1] == "response.completed"
    assert stream["types"].count("response.output_text.delta") == 2
    assert stream["sequence"] == list(range(len(stream["types"])))
    assert (stream["text"], stream["total"]) == ("Hello from Node.", 13)
    conforming_response(stream["final"])
    assert (steps["image"]["text"], steps["image"]["model"]) == ("A rectangle.", "openai/gpt-4o")
    image = next(p for p in fake.requests[1].json["messages"][-1]["content"] if p["type"] == "image_url")
    assert image["image_url"]["url"].startswith("data:image/")
    assert steps["tools"] == {
        "step": "tools",
        "name": "get_weather",
        "args": '{"city":"Paris"}',
        "text": "Sunny.",
        "previous": True,
    }
    assert fake.requests[3].json["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_n",
        "content": '{"sky":"sunny"}',
    }
    assert steps["stored"] == {
        "step": "stored",
        "text": "Sunny.",
        "items": ["function_call_output"],
        "gone": "NotFoundError",
    }
    assert steps["bad_request"] == {
        "step": "bad_request",
        "error": "BadRequestError",
        "status": 400,
        "code": "tool_type_unsupported",
        "param": "tools[0].type",
    }

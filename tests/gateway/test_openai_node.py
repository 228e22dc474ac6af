"""The same core cases through the official OpenAI Node SDK under Node (skipped, saying why, without
Node or when npm cannot install it): streamed text with usage, an image as a data URL, a tool round
trip, ``runTools`` (the SDK's own tool loop) not streamed and streamed, reasoning, and each error as the
SDK's own class."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.fake_openai import ToolCallScript
from tests.support.npm import npm_install
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

FLOW = Path(__file__).with_name("openai_node_flow.mjs")


@pytest.fixture(scope="session")
def node_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "openai-node", "openai")
    shutil.copy(FLOW, where / FLOW.name)
    return where


def test_the_node_sdk_does_the_core_cases(node_sdk: Path, gateway: Gateway) -> None:
    fake = gateway.openai
    fake.text("Hello ", "from Node.", usage=(9, 4))
    fake.text("A rectangle.")
    fake.tool_calls(
        [ToolCallScript(id="call_7", name="get_weather", argument_pieces=['{"city":', '"Paris"}'])]
    )
    fake.text("Sunny.")
    fake.reasoning(["Six ", "sevens."], ["42"])
    for stream in (False, True):  # runTools: a call, then the answer to the SDK's tool result
        call_id = f"call_run_{int(stream)}"
        fake.tool_calls(
            [ToolCallScript(id=call_id, name="get_weather", argument_pieces=['{"city": "Rome"}'])]
        )
        fake.text("Sunny in Rome.", usage=(50, 6))
    user = "node-user"
    done = subprocess.run(
        ["node", FLOW.name, gateway.v1, token(user), data_url("PNG"), token("node-tools")],
        cwd=node_sdk,
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS * 4,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    steps = {line["step"]: line for line in map(json.loads, done.stdout.splitlines())}
    assert steps["stream"] == {"step": "stream", "text": "Hello from Node.", "total": 13}
    assert steps["image"] == {"step": "image", "text": "A rectangle.", "model": "openai/gpt-4o"}
    image = next(p for p in fake.requests[1].json["messages"][-1]["content"] if p["type"] == "image_url")
    assert image["image_url"]["url"].startswith("data:image/")
    tools = steps["tools"]
    assert (tools["finish"], tools["name"], tools["args"], tools["text"]) == (
        "tool_calls",
        "get_weather",
        '{"city":"Paris"}',
        "Sunny.",
    )
    assert fake.requests[3].json["messages"][-1]["tool_call_id"] == "call_7"
    assert steps["reasoning"]["thought"] == "Six sevens."
    for step, call_id in (("run_tools", "call_run_0"), ("run_tools_streamed", "call_run_1")):
        ran = steps[step]
        assert "error" not in ran, ran
        assert (ran["ran"], ran["text"]) == (["Rome"], "Sunny in Rome.")
        assert ran["messages"] == 4  # the question, the call, the tool's result, the answer
        assert ran["total"] == 40 + 18 + 50 + 6
        answered = next(
            r.json for r in fake.requests if r.json["messages"][-1].get("tool_call_id") == call_id
        )
        assert json.loads(answered["messages"][-1]["content"]) == {"city": "Rome", "sky": "sunny"}
        assert answered["messages"][-2]["tool_calls"][0]["type"] == "function"
    assert steps["not_found"] == {
        "step": "not_found",
        "error": "NotFoundError",
        "status": 404,
        "code": "model_not_found",
    }
    assert steps["bad_request"]["error"] == "BadRequestError"
    assert steps["bad_request"]["code"] == "attachment_url_rejected"
    assert steps["unknown_url"] == {  # embeddings: not served, said in OpenAI's shape
        "step": "unknown_url",
        "error": "NotFoundError",
        "status": 404,
        "code": "unknown_url",
    }
    assert steps["auth"]["error"] == "AuthenticationError"
    assert steps["rate_limit"] == {
        "step": "rate_limit",
        "error": "RateLimitError",
        "status": 429,
        "code": "quota_exceeded",
    }
    assert msgspec.json.decode(done.stdout.splitlines()[0])  # JSON lines, nothing else

"""LiteLLM as a client: its SDK's ``openai/`` provider, pointed at Iris's ``/v1``, streams an image
request; the image reaches the vendor behind Iris."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)


def test_litellm_streams_an_image_request_through_iris(gateway: Gateway) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download
    import litellm

    gateway.openai.text("A small ", "picture.")
    stream: Any = litellm.completion(
        model="openai/openai/gpt-4o",  # LiteLLM's provider prefix, then Iris's model id
        api_base=gateway.v1,
        api_key=token("litellm-user"),
        stream=True,
        timeout=REQUEST_SECONDS,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe it."},
                    {"type": "image_url", "image_url": {"url": data_url("JPEG")}},
                ],
            }
        ],
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "A small picture."
    sent = gateway.openai.requests[-1].json["messages"][-1]["content"]
    assert [p["type"] for p in sent] == ["text", "image_url"]
    assert sent[1]["image_url"]["url"].startswith("data:image/")

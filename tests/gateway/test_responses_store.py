"""Stored conversations of ``/v1/responses`` through the official ``openai`` SDK, on both engines:
``previous_response_id`` continues a stored answer (the model sees the whole conversation), an
``item_reference`` names a stored item, ``GET``/``DELETE`` and ``input_items`` read and forget it,
each caller sees only their own (others' are 404), and ``store: false`` keeps nothing."""

from __future__ import annotations

import openai
import pytest
from openai.types.responses import ResponseInputMessageItem, ResponseInputText, ResponseItemList

from tests.gateway.conftest import Gateway
from tests.support.fake_openai import ToolCallScript
from tests.support.openai_sdk import client
from tests.support.openai_types import conforming
from tests.support.responses_types import conforming_response

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite", "postgresql"], indirect=True)


def test_previous_response_id_continues_a_stored_conversation(gateway: Gateway) -> None:
    sdk = client(gateway, "alice")
    gateway.openai.text("Hello Ada.")
    first = sdk.responses.create(model="openai/gpt-4o", input="I am Ada.", instructions="Be kind.")
    gateway.openai.text("You are Ada.")
    second = sdk.responses.create(
        model="openai/gpt-4o", input="Who am I?", previous_response_id=first.id, instructions="Be short."
    )
    assert second.previous_response_id == first.id
    assert gateway.openai.requests[-1].json["messages"] == [
        {"role": "system", "content": "Be short."},  # instructions are not carried over, as OpenAI's
        {"role": "user", "content": "I am Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "Who am I?"},
    ]
    got = sdk.responses.with_raw_response.retrieve(second.id)
    stored = conforming_response(got.http_response.json())
    assert (stored.id, stored.output_text, stored.status) == (second.id, "You are Ada.", "completed")

    raw = sdk.responses.input_items.with_raw_response.list(second.id)
    items = conforming(ResponseItemList, raw.http_response.json())
    (item,) = items.data
    assert isinstance(item, ResponseInputMessageItem)
    assert item.content[0].type == "input_text"
    assert items.first_id == item.id
    assert not items.has_more

    with pytest.raises(openai.NotFoundError) as theirs:
        client(gateway, "mallory").responses.retrieve(second.id)
    assert theirs.value.code == "response_not_found"
    with pytest.raises(openai.NotFoundError):
        client(gateway, "mallory").responses.create(
            model="openai/gpt-4o", input="Hi", previous_response_id=first.id
        )

    sdk.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(first.id)
    assert sdk.responses.retrieve(second.id).output_text == "You are Ada."  # a later one stays


def test_a_tool_call_continued_by_previous_response_id(gateway: Gateway) -> None:
    sdk = client(gateway, "bob")
    gateway.openai.tool_calls([ToolCallScript(id="call_7", name="get_time", argument_pieces=["{}"])])
    tool = {"type": "function", "name": "get_time", "parameters": {"type": "object"}, "strict": False}
    first = sdk.responses.create(model="openai/gpt-4o", input="Time?", tools=[tool])  # type: ignore[list-item]
    (call,) = first.output
    gateway.openai.text("It is noon.")
    second = sdk.responses.create(
        model="openai/gpt-4o",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_7", "output": "12:00"}],
        tools=[tool],  # type: ignore[list-item]
    )
    assert second.output_text == "It is noon."
    sent = gateway.openai.requests[-1].json["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_7"
    assert sent[2] == {"role": "tool", "tool_call_id": "call_7", "content": "12:00"}
    gateway.openai.text("Still noon.")
    sdk.responses.create(
        model="openai/gpt-4o",
        input=[
            {"role": "user", "content": "Time?"},
            {"type": "item_reference", "id": call.id or ""},
            {"type": "function_call_output", "call_id": "call_7", "output": "12:00"},
        ],
        tools=[tool],  # type: ignore[list-item]
    )
    assert gateway.openai.requests[-1].json["messages"][1]["tool_calls"][0]["function"]["name"] == "get_time"


def test_store_false_keeps_nothing(gateway: Gateway) -> None:
    sdk = client(gateway, "carol")
    gateway.openai.text("Not kept.")
    answer = sdk.responses.create(model="openai/gpt-4o", input="Hi", store=False)
    assert answer.status == "completed"
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(answer.id)
    with pytest.raises(openai.NotFoundError):
        sdk.responses.input_items.list(answer.id)
    gateway.openai.text("Streamed, not kept.")
    events = list(sdk.responses.create(model="openai/gpt-4o", input="Hi", store=False, stream=True))
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(events[0].response.id)  # type: ignore[union-attr]
    gateway.openai.text("Streamed and kept.")
    kept = list(sdk.responses.create(model="openai/gpt-4o", input="Hi", stream=True))
    assert sdk.responses.retrieve(kept[-1].response.id).output_text == "Streamed and kept."  # type: ignore[union-attr]


def test_input_items_are_paged(gateway: Gateway) -> None:
    sdk = client(gateway, "dave")
    gateway.openai.text("Noted.")
    turns = [{"role": "user", "content": f"Line {n}"} for n in range(3)]
    answer = sdk.responses.create(model="openai/gpt-4o", input=turns)  # type: ignore[arg-type]
    first = sdk.responses.input_items.list(answer.id, limit=2, order="asc")
    assert [_text(item) for item in first.data] == ["Line 0", "Line 1"]
    assert first.has_more
    everything = list(sdk.responses.input_items.list(answer.id, limit=2, order="asc"))  # the SDK pages on
    assert len(everything) == 3
    newest = sdk.responses.input_items.list(answer.id, limit=1)  # newest first by default, as OpenAI's
    assert _text(newest.data[0]) == "Line 2"


def _text(item: object) -> str:
    """An input message item's text."""
    assert isinstance(item, ResponseInputMessageItem), item
    part = item.content[0]
    assert isinstance(part, ResponseInputText), part
    return part.text

"""Every struct ``/v1`` answers with, at its smallest (each optional field at its default, which
``omit_defaults`` drops), against the ``openai`` SDK's own pydantic type for it: every key OpenAI requires
is on the wire, and the SDK's type validates it. A constant such as a tool call's ``"type": "function"``
that equals its default can then never vanish again unnoticed, in any struct added later either."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from openai.pagination import SyncPage
from openai.types import CompletionUsage, Model
from openai.types import chat as oc
from openai.types.chat import chat_completion as completion
from openai.types.chat import chat_completion_chunk as chunk
from openai.types.chat import chat_completion_message_function_tool_call as tool_call
from openai.types.completion_usage import CompletionTokensDetails, PromptTokensDetails
from openai.types.shared import ErrorObject
from pydantic import BaseModel

from iris.app.api.openai import wire
from tests.support.minimal_structs import encoded, minimal, reachable
from tests.support.openai_types import ErrorAnswer, conforming, required_keys

ANSWERS: tuple[type[msgspec.Struct], ...] = (
    wire.ChatCompletion,
    wire.ChatCompletionChunk,
    wire.ModelCard,
    wire.ModelCards,
    wire.ErrorAnswer,
)
"""What ``/v1`` sends: its JSON answers, each stream chunk, each error."""


SDK_TYPES: dict[type[msgspec.Struct], type[BaseModel]] = {
    wire.ChatCompletion: oc.ChatCompletion,
    wire.Choice: completion.Choice,
    wire.AssistantAnswer: oc.ChatCompletionMessage,
    wire.OpenAIToolCallOut: oc.ChatCompletionMessageFunctionToolCall,
    wire.OpenAIFunctionCallOut: tool_call.Function,
    wire.CompletionUsage: CompletionUsage,
    wire.PromptTokensDetails: PromptTokensDetails,
    wire.CompletionTokensDetails: CompletionTokensDetails,
    wire.ChatCompletionChunk: oc.ChatCompletionChunk,
    wire.ChunkChoice: chunk.Choice,
    wire.Delta: chunk.ChoiceDelta,
    wire.ToolCallDelta: chunk.ChoiceDeltaToolCall,
    wire.FunctionDelta: chunk.ChoiceDeltaToolCallFunction,
    wire.ModelCard: Model,
    wire.ModelCards: SyncPage[Model],
    wire.ErrorAnswer: ErrorAnswer,
    wire.ErrorBody: ErrorObject,
}
"""Each answer struct → the SDK's type for it."""


def test_every_answer_struct_has_an_sdk_type() -> None:
    """A struct added to an answer without a row here fails, so it is checked like the rest."""
    assert set(reachable(*ANSWERS)) == set(SDK_TYPES)


@pytest.mark.parametrize("struct", list(SDK_TYPES), ids=lambda s: s.__name__)
def test_each_answer_struct_at_its_defaults_keeps_what_openai_requires(struct: type[msgspec.Struct]) -> None:
    sdk_type = SDK_TYPES[struct]
    data: dict[str, Any] = encoded(minimal(struct))
    missing = required_keys(sdk_type) - set(data)
    assert not missing, f"{struct.__name__} drops {sorted(missing)} (OpenAI requires them): {data}"
    conforming(sdk_type, data)  # and the SDK's own type takes what is there, at every depth


def test_a_tool_call_says_it_is_a_function() -> None:
    call = wire.OpenAIToolCallOut(id="call_1", function=wire.OpenAIFunctionCallOut(name="f", arguments="{}"))
    answer = wire.AssistantAnswer(content=None, tool_calls=[call])
    data = msgspec.json.decode(msgspec.json.encode(answer))
    assert data["tool_calls"][0]["type"] == "function"
    assert data["role"] == "assistant"
    parsed = conforming(oc.ChatCompletionMessage, data)
    assert isinstance((parsed.tool_calls or [])[0], oc.ChatCompletionMessageFunctionToolCall)

"""A Responses API request → the same request in Chat Completions' terms, read by the gateway's core.

``input`` items become Chat Completions messages one for one (an assistant's ``function_call`` items
join the assistant message before them, as its ``tool_calls``), so every check of
``/v1/chat/completions`` applies unchanged — data URLs and Iris-signed image URLs, PDFs and audio
checked like uploads, the counts, tool answers naming an earlier call — and its errors are renamed
to the Responses field that caused them (``messages[2].content[1].image_url`` →
``input[1].content[1].image_url``). Items of earlier stored responses (``previous_response_id``,
``item_reference``) come first, in their stored form; a ``reasoning`` item is passed over (its text
is the vendor's, not something another model can continue from).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from iris.app.api.openai.responses_wire import (
    ContentIn,
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionChoice,
    FunctionTool,
    InputAudio,
    InputFile,
    InputImage,
    InputText,
    ItemReference,
    MessageItem,
    OutputTextIn,
    ResponsesRequest,
    TextFormatJsonObject,
    TextFormatJsonSchema,
)
from iris.app.api.openai.wire import (
    ChatCompletionRequest,
    ChatMessage,
    FileContent,
    FileData,
    FunctionCallIn,
    FunctionDef,
    ImageContent,
    ImageUrl,
    InputAudioContent,
    JsonObjectFormatIn,
    JsonSchemaFormat,
    JsonSchemaFormatIn,
    NamedFunction,
    NamedToolChoice,
    OpenAIAssistantMessage,
    OpenAIDeveloperMessage,
    OpenAISystemMessage,
    OpenAIToolMessage,
    OpenAIUserMessage,
    TextContent,
    ToolCallIn,
    ToolDef,
    UserPart,
)
from iris.app.api.openai.wire import InputAudio as ChatInputAudio
from iris.app.errors import IrisError, Unprocessable

Item = MessageItem | FunctionCallItem | FunctionCallOutputItem
_ITEM_TYPES: dict[str, type[Item]] = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "function_call_output": FunctionCallOutputItem,
}
_ID_PREFIX = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
}
_EFFORT = {"xhigh": "high"}
_KNOBS = {"response_format": "text.format", "max_tokens": "max_output_tokens"}
"""The core's names of refused knobs → the Responses fields that set them."""
_FIELD = re.compile(r"^messages\[(\d+)\]")
_ITEM_ID = re.compile(r"^[a-z]+_([0-9a-f]{32})_[io]\d+$")
PREVIOUS = "previous_response_id"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ReadInput:
    """The request in Chat Completions' terms, and this request's input items as they are stored."""

    chat: ChatCompletionRequest
    origins: list[str]
    """Each chat message's source: ``input[3]``, ``instructions`` or ``previous_response_id``."""
    items: list[dict[str, Any]]


def item_id(kind: str, response_hex: str, place: str) -> str:
    """An item's id: its kind's prefix, its response's id and its place there (``i2``: the third
    input item, ``o0``: the first output item), so an ``item_reference`` finds its response."""
    return f"{_ID_PREFIX[kind]}_{response_hex}_{place}"


def response_of_item(item: str) -> uuid.UUID | None:
    """The id of the response that holds the item ``item``, or ``None`` for an id not of this form."""
    match = _ITEM_ID.match(item)
    return uuid.UUID(match.group(1)) if match else None


def referenced_ids(body: ResponsesRequest) -> list[str]:
    """The ids the request's ``item_reference`` items name (read from storage before :func:`read_input`)."""
    if isinstance(body.input, str):
        return []
    return [str(raw.get("id")) for raw in body.input if raw.get("type") == "item_reference"]


def read_input(
    body: ResponsesRequest,
    earlier: Sequence[Mapping[str, Any]],
    stored: Mapping[str, Mapping[str, Any]],
    response_hex: str,
) -> ReadInput:
    """Read ``body`` after the ``earlier`` items of its stored chain; ``stored`` holds the items its
    ``item_reference``s name. 400s name the Responses field."""
    messages: list[ChatMessage] = []
    origins: list[str] = []
    if body.instructions:
        messages.append(OpenAISystemMessage(content=body.instructions))
        origins.append("instructions")
    for item in earlier:
        if item.get("type") == "reasoning":
            continue
        _append(messages, origins, _parsed(item, PREVIOUS), PREVIOUS)
    items: list[dict[str, Any]] = []
    raw_items: list[Any] = (
        [{"role": "user", "content": body.input}] if isinstance(body.input, str) else body.input
    )
    for index, raw in enumerate(raw_items):
        field = "input" if isinstance(body.input, str) else f"input[{index}]"
        kind = raw.get("type", "message") if isinstance(raw, dict) else None
        if kind == "reasoning":
            continue
        if kind == "item_reference":
            ref = _convert(raw, ItemReference, field)
            if ref.id not in stored:
                raise Unprocessable(
                    f"No stored item of yours has the id {ref.id!r}.",
                    code="item_not_found",
                    field=f"{field}.id",
                )
            raw = dict(stored[ref.id])
            kind = raw.get("type")
            if kind == "reasoning":
                continue
        parsed = _parsed(raw, field)
        _append(messages, origins, parsed, field)
        items.append(stored_item(parsed, item_id(str(kind), response_hex, f"i{len(items)}")))
    chat = ChatCompletionRequest(
        model=body.model,
        messages=messages,
        temperature=body.temperature,
        top_p=body.top_p,
        max_completion_tokens=body.max_output_tokens,
        response_format=_format(body),
        tools=offered_tools(body.tools) or None,
        tool_choice=NamedToolChoice(function=NamedFunction(name=body.tool_choice.name))
        if isinstance(body.tool_choice, FunctionChoice)
        else body.tool_choice,
        parallel_tool_calls=False if body.parallel_tool_calls is False else None,  # true: the default
        reasoning_effort=_effort(body),
        user=body.user,
    )
    return ReadInput(chat=chat, origins=origins, items=items)


def renamed(exc: IrisError, origins: Sequence[str]) -> IrisError:
    """``exc`` with its Chat Completions field renamed to the Responses field it came from."""
    if exc.field in _KNOBS:
        exc.field = _KNOBS[exc.field]
        return exc
    match = _FIELD.match(exc.field or "")
    if match is None or exc.field is None:
        return exc
    origin = origins[int(match.group(1))]
    rest = exc.field[match.end() :] if origin.startswith("input") else ""
    rest = rest.replace(".file.file_", ".file_").replace(".tool_call_id", ".call_id")
    exc.field = origin + rest
    return exc


def offered_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[ToolDef]:
    """The client's function tools; a built-in tool type (``web_search``, ``file_search`` …) is a 400:
    Iris runs none of them, and a model that silently went without would mislead the client."""
    offered: list[ToolDef] = []
    for index, raw in enumerate(tools or ()):
        kind = raw.get("type")
        if kind != "function":
            raise Unprocessable(
                f"Iris does not run the built-in tool type {kind!r}: offer function tools"
                ' ({"type": "function", "name", "parameters"}), which your client runs.',
                code="tool_type_unsupported",
                field=f"tools[{index}].type",
            )
        tool = _convert(raw, FunctionTool, f"tools[{index}]")
        offered.append(
            ToolDef(
                function=FunctionDef(
                    name=tool.name,
                    description=tool.description or "",
                    parameters=tool.parameters or {"type": "object", "properties": {}},
                    strict=tool.strict,
                )
            )
        )
    return offered


def stored_item(item: Item, item_id: str) -> dict[str, Any]:
    """An input item as it is stored and listed (``input_items``): its id and type, its fields."""
    kind = "message" if isinstance(item, MessageItem) else "function_call"
    if isinstance(item, FunctionCallOutputItem):
        kind = "function_call_output"
    body: dict[str, Any] = {"id": item_id, "type": kind, "status": "completed"}
    if isinstance(item, MessageItem):
        assistant = item.role == "assistant"
        parts: Sequence[ContentIn] = (
            [InputText(text=item.content)] if isinstance(item.content, str) else item.content
        )
        content = [msgspec.to_builtins(part) for part in parts]
        if assistant:
            content = [{"type": "output_text", "text": _text_of(p), "annotations": []} for p in parts]
        for part in content:
            if part["type"] == "input_image":
                part.setdefault("detail", "auto")
        return {**body, "role": item.role, "content": content}
    fields = msgspec.to_builtins(item)
    if isinstance(item, FunctionCallOutputItem):
        fields["output"] = _output_text(item.output)
    return {**body, **fields}


def _parsed(raw: Any, field: str) -> Item:
    if not isinstance(raw, dict):
        raise Unprocessable("An input item must be an object.", code="validation_failed", field=field)
    kind = raw.get("type", "message")
    if kind not in _ITEM_TYPES:
        raise Unprocessable(
            f"Iris does not take input items of type {kind!r}: send messages, function_call and"
            " function_call_output items.",
            code="unsupported_item",
            field=f"{field}.type",
        )
    return _convert({k: v for k, v in raw.items() if k != "type"}, _ITEM_TYPES[kind], field)


def _convert(raw: Mapping[str, Any], kind: type[T], field: str) -> T:
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        where = re.search(r"at `\$(.*)`", str(exc))
        detail = re.sub(r" - at `\$.*`", "", str(exc))
        raise Unprocessable(
            f"{field}: {detail}", code="validation_failed", field=field + (where.group(1) if where else "")
        ) from None


def _append(messages: list[ChatMessage], origins: list[str], item: Item, origin: str) -> None:
    """The chat message ``item`` is; a ``function_call`` joins the assistant message before it."""
    if isinstance(item, FunctionCallItem):
        call = ToolCallIn(id=item.call_id, function=FunctionCallIn(name=item.name, arguments=item.arguments))
        last = messages[-1] if messages else None
        if isinstance(last, OpenAIAssistantMessage):
            last.tool_calls = [*(last.tool_calls or ()), call]
            return
        messages.append(OpenAIAssistantMessage(tool_calls=[call]))
    elif isinstance(item, FunctionCallOutputItem):
        messages.append(OpenAIToolMessage(content=_output_text(item.output), tool_call_id=item.call_id))
    else:
        messages.append(_message(item, origin))
    origins.append(origin)


def _message(item: MessageItem, field: str) -> ChatMessage:
    if item.role == "user":
        content = (
            item.content
            if isinstance(item.content, str)
            else [_user_part(p, f"{field}.content[{i}]") for i, p in enumerate(item.content)]
        )
        return OpenAIUserMessage(content=content)
    if isinstance(item.content, str):
        text = item.content
    else:
        for index, part in enumerate(item.content):
            if not isinstance(part, InputText | OutputTextIn):
                raise Unprocessable(
                    f"A {item.role} message holds text only.",
                    code="unsupported_part",
                    field=f"{field}.content[{index}]",
                )
        text = "".join(_text_of(p) for p in item.content)
    if item.role == "assistant":
        return OpenAIAssistantMessage(content=text)
    if item.role == "developer":
        return OpenAIDeveloperMessage(content=text)
    return OpenAISystemMessage(content=text)


def _user_part(part: ContentIn, field: str) -> UserPart:
    """One content part in Chat Completions' terms (the gateway checks it; index for index). A
    ``file_id`` or ``file_url`` names a file Iris does not hold."""
    if isinstance(part, InputImage):
        if part.image_url is None:
            raise _not_held(f"{field}.file_id", "image", "data:image/png;base64,…")
        detail = "high" if part.detail == "original" else part.detail
        return ImageContent(image_url=ImageUrl(url=part.image_url, detail=detail))
    if isinstance(part, InputFile):
        if part.file_data is None and part.file_id is None and part.file_url is not None:
            raise _not_held(f"{field}.file_url", "PDF", "data:application/pdf;base64,…")
        return FileContent(
            file=FileData(file_data=part.file_data, file_id=part.file_id, filename=part.filename)
        )
    if isinstance(part, InputAudio):
        audio = part.input_audio
        return InputAudioContent(input_audio=ChatInputAudio(data=audio.data, format=audio.format))
    return TextContent(text=_text_of(part))


def _not_held(field: str, noun: str, example: str) -> Unprocessable:
    return Unprocessable(
        f"Iris fetches no files by id or URL: send the {noun} itself as a data URL ({example}).",
        code="file_source_unsupported",
        field=field,
    )


def _text_of(part: ContentIn) -> str:
    return str(getattr(part, "text", None) or getattr(part, "refusal", ""))


def _output_text(output: str | list[ContentIn]) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(_text_of(p) for p in output if isinstance(p, InputText | OutputTextIn))


def _format(body: ResponsesRequest) -> JsonObjectFormatIn | JsonSchemaFormatIn | None:
    fmt = body.text.format if body.text is not None else None
    if isinstance(fmt, TextFormatJsonObject):
        return JsonObjectFormatIn()
    if isinstance(fmt, TextFormatJsonSchema):
        schema = JsonSchemaFormat(
            name=fmt.name, schema=fmt.schema, strict=fmt.strict, description=fmt.description
        )
        return JsonSchemaFormatIn(json_schema=schema)
    return None


def _effort(body: ResponsesRequest) -> Any:
    effort = body.reasoning.effort if body.reasoning is not None else None
    return _EFFORT.get(effort, effort) if effort is not None else None

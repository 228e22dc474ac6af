"""What the OpenAPI document needs beyond what Litestar infers from handler signatures.

A typed client is generated from ``/schema/openapi.json`` (README), so nothing we document may be
untyped:

- **Events.** Every SSE endpoint answers ``text/event-stream`` whose items are ``AgUiEvent``, a
  ``oneOf`` of the event structs in :mod:`app.agui.events` discriminated by ``type``; the ``iris/…``
  metadata objects are typed from :mod:`app.runs.outputs`.
- **Bodies parsed by hand.** Run input messages and chat parts are read leniently by hand
  (:mod:`app.agui.input`, :mod:`app.runs.chat_input`), so the request structs type them as dicts.
  :data:`_SHARPER` gives just those fields the shapes the parsers accept; every other field comes
  from the request struct itself.
- **Errors.** Each operation lists the problem+json statuses and ``code`` values it can answer
  (:func:`documented`, used on every route); the ones every route shares are added from what the
  operation is (authenticated, has a JSON body or query parameters).
- **Any.** A Python ``Any`` is any JSON value: ``JsonValue``, never an empty schema.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal, get_args

import msgspec
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import (
    OpenAPI,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Reference,
    RequestBody,
    Schema,
)

from app.agui.events import (
    AgUiEvent,
    Custom,
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from app.agui.input import RunAgentInput
from app.api.problems import PROBLEM_JSON, Problem
from app.runs.deadlines import MESSAGES as DEADLINE_MESSAGES
from app.runs.interrupts import TOOL_CALL_KEY
from app.runs.outputs import (
    IGNORED_RESUME_KEY,
    TOOL_OUTPUT_KEY,
    USER_MESSAGE_KEY,
    WORKER_OUTPUT_KEY,
    ToolAgentOutput,
    WorkerAgentOutput,
)
from app.schemas.chat import ChatRequest, LlmChatAnswer, LlmChatRequest, LlmMessageIn
from providers.errors import ProviderErrorKind
from providers.wire import WireStruct

SSE = "text/event-stream"
_REF = "#/components/schemas/{name}"
JSON_VALUE = "JsonValue"
EVENT = "AgUiEvent"

# ---------------------------------------------------------------------------------------------
# Inbound shapes the parsers accept (AG-UI 1.0 names). Unknown roles and part types are skipped by
# the server, and refused part kinds (image_url, audio, …) are 422s, so neither is listed.


class TextInputContent(WireStruct, tag_field="type", tag="text"):
    text: str


class InputContentUrlSource(WireStruct, tag_field="type", tag="url", kw_only=True):
    """A signed URL of this deployment's storage (``POST /api/files`` answers one)."""

    value: str
    mime_type: str | None = None


class ImageInputMetadata(WireStruct, kw_only=True):
    """Open: other keys are allowed and ignored."""

    filename: str | None = None


class ImageInputContent(WireStruct, tag_field="type", tag="image", kw_only=True):
    source: InputContentUrlSource
    metadata: ImageInputMetadata | None = None


class BinaryInputContent(WireStruct, tag_field="type", tag="binary", kw_only=True):
    """Seed 000's image block: an upload ``id`` or a signed ``url`` (inline ``data`` is refused)."""

    mime_type: Literal["image/png", "image/jpeg", "image/webp"]
    id: str | None = None
    url: str | None = None
    filename: str | None = None


InputContent = TextInputContent | ImageInputContent | BinaryInputContent


class FunctionCall(WireStruct):
    name: str
    arguments: str


class ToolCall(WireStruct, kw_only=True):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class DeveloperMessage(WireStruct, tag_field="role", tag="developer"):
    id: str
    content: str


class SystemMessage(WireStruct, tag_field="role", tag="system"):
    id: str
    content: str


class AssistantMessage(WireStruct, tag_field="role", tag="assistant", kw_only=True):
    id: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class UserMessage(WireStruct, tag_field="role", tag="user"):
    id: str
    content: str | list[InputContent]


class ToolMessage(WireStruct, tag_field="role", tag="tool", kw_only=True):
    """A frontend tool's result; only text parts of a list ``content`` are read."""

    id: str
    content: str | list[TextInputContent]
    tool_call_id: str
    error: str | None = None


Message = DeveloperMessage | SystemMessage | AssistantMessage | UserMessage | ToolMessage


class ForwardedProps(WireStruct, kw_only=True):
    """The ``forwardedProps`` keys Iris reads; others are allowed and ignored."""

    model_id: str | None = None
    """A catalogue model (its id or ``provider/modelId``); default: the thread's, then the agent's."""
    agent: str | None = None
    """An agent slug, for a new thread; default: the default agent."""
    enable_tools: bool | None = None
    """``false`` offers the model no tools."""


class ChatImagePartIn(WireStruct, tag_field="type", tag="image", kw_only=True):
    """Seed 002's image part: ``image`` is a signed URL from ``POST /api/files``."""

    image: str
    mime_type: Literal["image/png", "image/jpeg", "image/webp"]
    name: str | None = None


ChatPart = TextInputContent | ChatImagePartIn

_SHARPER: dict[type[msgspec.Struct], dict[str, Any]] = {
    RunAgentInput: {"messages": list[Message], "forwardedProps": ForwardedProps | None},
    ChatRequest: {"parts": list[ChatPart] | None},
    LlmChatRequest: {"parts": list[ChatPart] | None},
    LlmMessageIn: {"content": str | list[ChatPart]},
}
"""Request struct → wire field → the type the hand parser actually accepts there."""

# ---------------------------------------------------------------------------------------------
# The ``iris/…`` metadata objects events carry (open: AG-UI metadata may hold anything else).


class EventMetadata(msgspec.Struct):
    """Open event metadata; Iris sets none on this event."""


class RunStartedMetadata(
    msgspec.Struct,
    rename={"ignored_resume_entries": IGNORED_RESUME_KEY, "user_message_id": USER_MESSAGE_KEY},
    kw_only=True,
):
    ignored_resume_entries: list[str] | None = None
    """Resume entries that answered no open interrupt (their interrupt ids)."""
    user_message_id: str | None = None
    """The id history shows for the user message this run answers (``editMessageId`` takes it)."""


class TextMessageEndMetadata(msgspec.Struct, rename={"worker_agent_output": WORKER_OUTPUT_KEY}, kw_only=True):
    worker_agent_output: WorkerAgentOutput | None = None


class ToolCallResultMetadata(msgspec.Struct, rename={"tool_agent_output": TOOL_OUTPUT_KEY}, kw_only=True):
    tool_agent_output: ToolAgentOutput | None = None


class InterruptToolCall(WireStruct):
    """The tool call an approval interrupt asks about."""

    name: str
    arguments: str


class InterruptMetadata(msgspec.Struct, rename={"tool_call": TOOL_CALL_KEY}, kw_only=True):
    tool_call: InterruptToolCall | None = None


_EVENT_METADATA: dict[type[msgspec.Struct], type[msgspec.Struct]] = {
    RunStarted: RunStartedMetadata,
    RunFinished: EventMetadata,
    RunError: EventMetadata,
    TextMessageStart: EventMetadata,
    TextMessageContent: EventMetadata,
    TextMessageEnd: TextMessageEndMetadata,
    ToolCallStart: EventMetadata,
    ToolCallArgs: EventMetadata,
    ToolCallEnd: EventMetadata,
    ToolCallResult: ToolCallResultMetadata,
    Custom: EventMetadata,
    Interrupt: InterruptMetadata,
}

_OPEN = (
    ForwardedProps,
    ImageInputMetadata,
    EventMetadata,
    RunStartedMetadata,
    TextMessageEndMetadata,
    ToolCallResultMetadata,
    InterruptMetadata,
)
"""Objects that allow keys beyond the listed ones (any JSON value)."""

# ---------------------------------------------------------------------------------------------
# Components


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(name=name)}


_SCALARS = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]
_JSON_OBJECT = {"type": "object", "additionalProperties": _ref(JSON_VALUE)}
_JSON_VALUE_SCHEMA: dict[str, Any] = {
    # An array's items recurse through objects only: TypeScript refuses a type that is an array of
    # itself (TS2502), so arrays directly inside arrays are left out.
    "description": "Any JSON value (arrays of arrays excepted).",
    "oneOf": [*_SCALARS, _JSON_OBJECT, {"type": "array", "items": {"oneOf": [*_SCALARS, _JSON_OBJECT]}}],
}


def _generate(
    roots: Iterable[Any], fields: Mapping[type[msgspec.Struct], Mapping[str, Any]]
) -> dict[str, Any]:
    """msgspec's JSON Schema of ``roots``, with the listed struct fields replaced by sharper types."""
    replacements = [
        (struct, name, kind) for struct, by_name in fields.items() for name, kind in by_name.items()
    ]
    schemas, components = msgspec.json.schema_components(
        [*roots, *(kind for _, _, kind in replacements)], ref_template=_REF
    )
    for (struct, name, _), schema in zip(replacements, schemas[-len(replacements) :], strict=True):
        properties = components[struct.__name__]["properties"]
        if name not in properties:
            raise KeyError(f"{struct.__name__} has no field {name!r} to document")
        properties[name] = schema | (
            {"default": properties[name]["default"]} if "default" in properties[name] else {}
        )
    return components


@functools.cache
def components() -> dict[str, Any]:
    """The schemas this module adds to the document (they replace Litestar's of the same name)."""
    inbound = _generate(_SHARPER, _SHARPER)
    outbound = _generate(
        [AgUiEvent, Problem, LlmChatAnswer],
        {event: {"metadata": kind | None} for event, kind in _EVENT_METADATA.items()},
    )
    (union,), _ = msgspec.json.schema_components([AgUiEvent], ref_template=_REF)
    outbound[EVENT] = union | {"description": "One AG-UI 1.0 event: the JSON of one SSE `data:` line."}
    for schema in outbound.values():
        _never_null(schema)  # every optional field of an answer is absent, never null
    out = {JSON_VALUE: _JSON_VALUE_SCHEMA, **inbound, **outbound}
    for struct in _OPEN:
        out[struct.__name__]["additionalProperties"] = _ref(JSON_VALUE)
    for schema in out.values():
        any_is_json(schema)
        if "description" in schema:
            schema["description"] = markdown(schema["description"])
    return out


def _never_null(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        branches = prop.get("anyOf", [])
        if prop.get("default", ...) is None and {"type": "null"} in branches:
            rest = [b for b in branches if b != {"type": "null"}]
            prop.pop("default")
            prop.pop("anyOf")
            prop.update(rest[0] if len(rest) == 1 else {"anyOf": rest})


def _subschemas(schema: dict[str, Any]) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """(container, key, subschema) for every schema directly inside ``schema``."""
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            yield schema, key, schema[key]
    for key in ("properties", "patternProperties", "$defs"):
        for name, sub in schema.get(key, {}).items():
            yield schema[key], name, sub
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for index, sub in enumerate(schema.get(key, [])):
            yield schema[key], index, sub


_ANNOTATIONS = {"default", "description", "title", "examples"}


def any_is_json(schema: dict[str, Any]) -> None:
    """In place: an empty schema (Python ``Any``) becomes ``JsonValue``; an object with no declared
    keys (``dict[str, Any]``) maps strings to JSON values; a tagged union is a ``oneOf``; a string
    enum says it is a string."""
    if schema.get("type") == "object" and "properties" not in schema and "additionalProperties" not in schema:
        schema["additionalProperties"] = _ref(JSON_VALUE)
    if "discriminator" in schema and "anyOf" in schema:
        schema["oneOf"] = schema.pop("anyOf")
    if "enum" in schema and "type" not in schema and all(isinstance(v, str) for v in schema["enum"]):
        schema["type"] = "string"
    for container, key, sub in _subschemas(schema):
        if not sub.keys() - _ANNOTATIONS:
            container[key] = {**sub, **_ref(JSON_VALUE)}
        else:
            any_is_json(sub)


class IrisOpenAPI(OpenAPI):
    """The document, with :func:`components` merged in when it is rendered (Litestar replaces the
    configured component schemas with the ones it generates, so they cannot be configured)."""

    def to_schema(self) -> dict[str, Any]:
        document = super().to_schema()
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(copy.deepcopy(components()))
        for schema in schemas.values():
            any_is_json(schema)
        for path in document.get("paths", {}).values():
            for operation in (op for op in path.values() if isinstance(op, dict)):
                for part in [operation.get("requestBody", {}), *operation.get("responses", {}).values()]:
                    for media in part.get("content", {}).values():
                        if "schema" in media:
                            any_is_json(media["schema"])
        return document


class IrisOpenAPIConfig(OpenAPIConfig):
    """Litestar's configuration, rendering an :class:`IrisOpenAPI`."""

    def to_openapi_schema(self) -> OpenAPI:
        base = super().to_openapi_schema()
        return IrisOpenAPI(**{f: getattr(base, f) for f in base.__dataclass_fields__})


# ---------------------------------------------------------------------------------------------
# Operations

_AUTH = {401: ("missing_token", "invalid_token", "token_expired")}
_JSON_BODY = {
    400: ("malformed_body",),
    413: ("request_too_large",),
    422: ("json_too_deep", "validation_failed"),
}
# Any operation may meet an unavailable database (app/persistence/availability.py).
_ALWAYS = {500: ("internal_error",), 503: ("database_unavailable",)}

Problems = Mapping[int, Iterable[str]]


AGUI_INPUT_CODES = (
    "file_source_unsupported",
    "image_url_part_unsupported",
    "inline_data_unsupported",
    "media_kind_unsupported",
)
"""Part shapes ``RunAgentInput`` messages may not carry (:mod:`app.agui.input`)."""

_DEADLINE_CODES = tuple(DEADLINE_MESSAGES)

_IMAGE_CHECKS = (
    "attachment_url_rejected",
    "image_type_unsupported",
    "model_lacks_vision",
    "too_many_images",
    "unsupported_media_type",
    "upload_not_found",
)

RUN_CHECKS: dict[int, tuple[str, ...]] = {
    403: ("agent_not_for_guests", "model_not_for_guests"),
    404: ("agent_not_found", "thread_not_found"),
    409: ("run_exists", "run_in_progress"),
    422: (
        *_IMAGE_CHECKS,
        "empty_message",
        "interrupt_expired",
        "interrupt_pending",
        "interrupt_unanswered",
        "model_not_found",
        "no_new_message",
        "request_too_large",
    ),
    429: ("quota_exceeded",),
    503: ("provider_key_missing", "provider_unavailable", "storage_unavailable"),
}
"""What a run is checked for before its stream opens (:mod:`app.runs.intake`), on either surface."""

STATELESS_CHECKS: dict[int, tuple[str, ...]] = {
    403: ("model_not_for_guests",),
    422: (*_IMAGE_CHECKS, "empty_message", "model_not_found", "part_type_unsupported", "request_too_large"),
    429: ("quota_exceeded",),
    # Without streaming, a failed run is a 502 with the code its RUN_ERROR would carry.
    502: (
        *(f"provider_{kind}" for kind in get_args(ProviderErrorKind)),
        *_DEADLINE_CODES,
        "internal_error",
        "invalid_output",
        "request_too_large",
        "storage_unavailable",
        "unsupported_part",
    ),
    503: ("provider_key_missing", "provider_unavailable"),
}
"""``POST /api/llm/chat`` (:mod:`app.runs.stateless`)."""


def documented(
    *,
    body: str | None = None,
    form: Schema | None = None,
    events: bool = False,
    ok: Mapping[str, Schema | Reference] | None = None,
    empty: Mapping[int, str] | None = None,
    problems: Problems | None = None,
) -> type[Operation]:
    """The operation class of one route: ``body`` names the request body's component (``form``: a
    multipart form's schema), ``events``
    is the AG-UI stream of the success answer, ``ok`` its (other) content, ``empty`` further
    bodiless answers (status → description), ``problems`` are the
    statuses and codes the route itself answers (the shared ones are added)."""
    declared = dict(problems or {})

    @dataclass
    class _Documented(Operation):
        def __post_init__(self) -> None:
            _from_docstring(self)
            if body is not None:
                self.request_body = RequestBody(
                    content={"application/json": OpenAPIMediaType(schema=_reference(body))},
                    required=True,
                )
            if form is not None:
                self.request_body = RequestBody(
                    content={"multipart/form-data": OpenAPIMediaType(schema=form)}, required=True
                )
            answers = {k: v for k, v in (self.responses or {}).items() if k.startswith("2")}
            for answer in answers.values():
                if not isinstance(answer, OpenAPIResponse):
                    continue
                content = {media: OpenAPIMediaType(schema=s) for media, s in (ok or {}).items()}
                if events:
                    answer.content = {SSE: OpenAPIMediaType(schema=_reference(EVENT)), **content}
                    answer.description = (
                        "AG-UI 1.0 events as server-sent events: each `data:` line is one `AgUiEvent`, "
                        "each `id:` its number in the run (send it back as `Last-Event-ID` to re-attach)."
                    )
                elif ok is not None:
                    answer.content = content
            for status, description in (empty or {}).items():
                answers[str(status)] = OpenAPIResponse(description=description)
            shared: list[Problems] = [_ALWAYS, declared]
            if self.security:
                shared.append(_AUTH)
            if isinstance(self.request_body, RequestBody) and "application/json" in self.request_body.content:
                shared.append(_JSON_BODY)
            self.responses = {**answers, **_problem_responses(shared)}

    return _Documented


def _problem_responses(sources: Iterable[Problems]) -> dict[str, OpenAPIResponse]:
    codes: dict[int, set[str]] = {}
    for source in sources:
        for status, listed in source.items():
            codes.setdefault(status, set()).update(listed)
    return {
        str(status): OpenAPIResponse(
            description=HTTPStatus(status).phrase,
            content={
                PROBLEM_JSON: OpenAPIMediaType(
                    schema=Schema(
                        all_of=[
                            _reference(Problem.__name__),
                            Schema(
                                type=OpenAPIType.OBJECT,
                                properties={
                                    "status": Schema(type=OpenAPIType.INTEGER, const=status),
                                    "code": Schema(type=OpenAPIType.STRING, enum=sorted(codes[status])),
                                },
                                required=["code", "status"],
                            ),
                        ]
                    )
                )
            },
        )
        for status in sorted(codes)
    }


def _reference(name: str) -> Reference:
    return Reference(ref=_REF.format(name=name))


_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def markdown(text: str) -> str:
    """Docstring reST literals and roles as Markdown code spans."""
    return _RST_ROLE.sub(r"`\1`", _RST_LITERAL.sub(r"`\1`", text))


def _from_docstring(operation: Operation) -> None:
    """Summary: the docstring's first sentence; description: all of it (RST literals as Markdown)."""
    if not operation.description:
        return
    text = markdown(operation.description)
    operation.summary = _first_sentence(" ".join(text.split("\n\n", 1)[0].split()))
    operation.description = text


def _first_sentence(paragraph: str) -> str:
    """Up to the first ``.``, ``:`` or ``;`` that ends a clause outside parentheses."""
    depth = 0
    for index, char in enumerate(paragraph):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ".:;" and paragraph[index + 1 : index + 2] in ("", " "):
            return paragraph[:index]
    return paragraph

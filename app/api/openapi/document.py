"""The document's component schemas, made by msgspec from the events, the problem document and the
declared shapes (:mod:`iris.app.api.openapi.schemas`), and the configuration that merges them in when the
document is rendered. A Python ``Any`` becomes ``JsonValue`` throughout.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import OpenAPI, Reference

from iris.app.agui.events import AgUiEvent
from iris.app.agui.input import RunAgentInput
from iris.app.api.anthropic.wire import ROOTS as ANTHROPIC_ROOTS
from iris.app.api.openai.responses_wire import ROOTS as RESPONSES_ROOTS
from iris.app.api.openai.responses_wire import SCHEMA_PROPERTIES as RESPONSES_PROPERTIES
from iris.app.api.openai.wire import ROOTS as OPENAI_ROOTS
from iris.app.api.openapi.schemas import COMPONENT_RULES, EVENT_METADATA, OPEN, REQUEST_BODIES, SHARPER
from iris.app.api.openapi.ui_chunks import ui_chunk_schemas
from iris.app.api.problems import Problem
from iris.app.schemas.chat import LlmChatAnswer
from iris.app.schemas.history import MessagesSnapshot
from iris.app.threads import THREAD_ID_PATTERN

_REF = "#/components/schemas/{name}"
JSON_VALUE = "JsonValue"
EVENT = "AgUiEvent"
SSE_EVENT = "AgUiServerSentEvent"
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard, padded base64 without line breaks: what Iris decodes (Anthropic's ``source.data``)."""
UI_SSE_EVENT = "UiMessageServerSentEvent"
STREAM_EVENT = AgUiEvent | MessagesSnapshot
"""What an AG-UI stream's ``data:`` lines hold: the run's events, and the ``MESSAGES_SNAPSHOT`` a
re-attach sends when asked (not one of the run's events, so not in :data:`AgUiEvent`). Its component is
the one Litestar makes for the history routes that answer with it, so the history pages keep theirs."""
_EVENT_DESCRIPTION = (
    "One AG-UI 1.0 event: the JSON of one SSE `data:` line. `ACTIVITY_SNAPSHOT` and `ACTIVITY_DELTA` "
    "(`activityType` `iris/toolProgress`) carry a running tool's progress; `MESSAGES_SNAPSHOT` comes only "
    "when asked (`?snapshot=messages` on a re-attach), right after `RUN_STARTED` and without an `id:` line."
)


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
    inbound = _generate([*SHARPER, *REQUEST_BODIES], SHARPER)
    outbound = _generate(
        [AgUiEvent, Problem, LlmChatAnswer],
        {event: {"metadata": kind | None} for event, kind in EVENT_METADATA.items()},
    )
    (union,), _ = msgspec.json.schema_components([STREAM_EVENT], ref_template=_REF)
    outbound[EVENT] = union | {"description": _EVENT_DESCRIPTION}
    for schema in outbound.values():
        _never_null(schema)  # every optional field of an answer is absent, never null
    _, gateway = msgspec.json.schema_components(
        (*OPENAI_ROOTS, *RESPONSES_ROOTS), ref_template=_REF
    )  # OpenAI's nulls stay
    _, messages = msgspec.json.schema_components(ANTHROPIC_ROOTS, ref_template=_REF)  # Anthropic's too
    assert not messages.keys() & gateway.keys() - {JSON_VALUE}, messages.keys() & gateway.keys()
    gateway = {**gateway, **messages}
    out = {JSON_VALUE: _JSON_VALUE_SCHEMA, **inbound, **outbound, **gateway, **ui_chunk_schemas()}
    out[SSE_EVENT] = server_sent_event(_ref(EVENT), "One AG-UI event as the stream sends it.")
    out["Base64Source"]["properties"]["data"] |= {"pattern": BASE64_PATTERN, "contentEncoding": "base64"}
    done = {"type": "string", "const": "[DONE]", "description": "The stream's last line."}
    chunk = _json_data(_ref("UiMessageChunk"))
    out[UI_SSE_EVENT] = server_sent_event({"oneOf": [chunk, done]}, "One UI message chunk, then `[DONE]`.")
    for struct in OPEN:
        out[struct.__name__]["additionalProperties"] = _ref(JSON_VALUE)
    for ruled, rules in COMPONENT_RULES.items():
        out[ruled.__name__].update(rules)
    out["ResponsesRequest"]["properties"].update(RESPONSES_PROPERTIES)
    out[RESUME_INPUT] = _resume_input(out[RunAgentInput.__name__])
    for schema in out.values():
        any_is_json(schema)
        if "description" in schema:
            schema["description"] = markdown(schema["description"])
    return out


RESUME_INPUT = "RunAgentResumeInput"
RESUME_PATH = "/agent/runs/resume"


def _resume_input(run_input: dict[str, Any]) -> dict[str, Any]:
    """``RunAgentInput`` as ``/agent/runs/resume`` takes it: ``resume`` answers at least one interrupt
    (422 ``resume_required`` otherwise)."""
    resume = next(b for b in run_input["properties"]["resume"]["anyOf"] if b.get("type") == "array")
    return {
        **run_input,
        "title": RESUME_INPUT,
        "properties": {**run_input["properties"], "resume": {**resume, "minItems": 1}},
        "required": [*run_input.get("required", []), "resume"],
    }


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
                _document_thread_ids(operation)
        resume = document.get("paths", {}).get(RESUME_PATH, {}).get("post")
        if resume is not None:
            resume["requestBody"]["content"]["application/json"]["schema"] = _ref(RESUME_INPUT)
        return document


THREAD_ID_PARAMETERS = ("threadId", "sessionId")
"""Path and query parameters that are thread ids: every route checks them with ``check_thread_id``
(422 ``invalid_thread_id``), so the document gives them its pattern (documentation only: the check
stays the routes', with its own code, instead of Litestar's 400)."""


def _document_thread_ids(operation: dict[str, Any]) -> None:
    for parameter in operation.get("parameters", []):
        if parameter.get("name") in THREAD_ID_PARAMETERS and parameter.get("in") in ("path", "query"):
            parameter["schema"] = {**parameter.get("schema", {}), "pattern": THREAD_ID_PATTERN}


class IrisOpenAPIConfig(OpenAPIConfig):
    """Litestar's configuration, rendering an :class:`IrisOpenAPI`."""

    def to_openapi_schema(self) -> OpenAPI:
        base = super().to_openapi_schema()
        return IrisOpenAPI(**{f: getattr(base, f) for f in base.__dataclass_fields__})


def reference(name: str) -> Reference:
    """A ``$ref`` to the component schema ``name``."""
    return Reference(ref=_REF.format(name=name))


_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def markdown(text: str) -> str:
    """Docstring reST literals and roles as Markdown code spans."""
    return _RST_ROLE.sub(r"`\1`", _RST_LITERAL.sub(r"`\1`", text))


def server_sent_event(data: dict[str, Any], description: str) -> dict[str, Any]:
    """One server-sent event as a stream's ``text/event-stream`` schema describes it (OpenAPI 3.1 has
    ``schema`` describe each event, ``{data, event, id, retry}``): its ``data:`` line is JSON of ``data``."""
    payload = data if "oneOf" in data else _json_data(data)
    return {
        "type": "object",
        "description": description,
        "properties": {
            "data": payload,
            "event": {"type": "string"},
            "id": {"type": "string", "description": "Its number in the run: `Last-Event-ID` to re-attach."},
            "retry": {"type": "integer"},
        },
        "required": ["data"],
    }


def _json_data(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": schema}

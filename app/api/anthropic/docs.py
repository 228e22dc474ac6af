"""The OpenAPI description of the ``/v1/messages`` routes. Their errors are not problem+json: they are
Anthropic's ``{"type": "error", "error": {...}}`` (``AnthropicErrorAnswer``) as ``application/json``,
each status listing the ``error.details.error_code`` values it can carry, like every other route does for
its problems."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

from litestar.openapi.spec import (
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    RequestBody,
    Schema,
)

from iris.app.api.anthropic.errors import status_for
from iris.app.api.anthropic.wire import AnthropicErrorAnswer
from iris.app.api.openapi.codes import ALWAYS, AUTH, JSON_BODY
from iris.app.api.openapi.document import reference
from iris.app.api.openapi.operations import SSE, describe_from_docstring

_STREAMED = (
    "A `message`, or with `stream` Anthropic's server-sent events: each `event:` names the `type` its"
    " `data:` line repeats, from `message_start` to `message_stop` (or one `error` if the run fails)."
)


def anthropic_documented(
    *, body: str, ok: str, streamed: bool = False, errors: Mapping[int, Iterable[str]] | None = None
) -> type[Operation]:
    """The operation class of a ``/v1/messages`` route: ``ok`` names the JSON answer's component;
    ``streamed`` adds the SSE events; ``errors`` the statuses and codes the route answers
    (authentication, a JSON body's and the database's are added)."""
    shared: list[Mapping[int, Iterable[str]]] = [ALWAYS, AUTH, JSON_BODY, errors or {}]

    @dataclass
    class _Documented(Operation):
        def __post_init__(self) -> None:
            describe_from_docstring(self)
            self.request_body = RequestBody(
                content={"application/json": OpenAPIMediaType(schema=reference(body))}, required=True
            )
            content = {"application/json": OpenAPIMediaType(schema=reference(ok))}
            if streamed:
                events = [
                    "AnthropicMessageStart",
                    "AnthropicContentBlockStart",
                    "AnthropicContentBlockDelta",
                    "AnthropicContentBlockStop",
                    "AnthropicMessageDelta",
                    "AnthropicMessageStop",
                    "AnthropicPing",
                    AnthropicErrorAnswer.__name__,
                ]
                content[SSE] = OpenAPIMediaType(schema=Schema(one_of=[reference(e) for e in events]))
            description = _STREAMED if streamed else "OK"
            self.responses = {"200": OpenAPIResponse(description=description, content=content)}
            self.responses.update(_error_responses(shared))

    return _Documented


def _error_responses(sources: Iterable[Mapping[int, Iterable[str]]]) -> dict[str, OpenAPIResponse]:
    codes: dict[int, set[str]] = {}
    for source in sources:
        for status, listed in source.items():
            for code in listed:
                codes.setdefault(status_for(status, code), set()).add(code)
    return {str(status): _error_response(status, sorted(codes[status])) for status in sorted(codes)}


def _error_response(status: int, codes: list[str]) -> OpenAPIResponse:
    code = Schema(type=OpenAPIType.STRING, enum=codes)
    details = Schema(type=OpenAPIType.OBJECT, properties={"error_code": code}, required=["error_code"])
    error = Schema(type=OpenAPIType.OBJECT, properties={"details": details}, required=["details"])
    narrowed = Schema(type=OpenAPIType.OBJECT, properties={"error": error}, required=["error"])
    schema = Schema(all_of=[reference(AnthropicErrorAnswer.__name__), narrowed])
    phrase = HTTPStatus(status).phrase if status != 529 else "Overloaded"
    return OpenAPIResponse(description=phrase, content={"application/json": OpenAPIMediaType(schema=schema)})

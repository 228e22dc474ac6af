"""The OpenAPI description of the ``/v1`` routes. Their errors are not problem+json: they are OpenAI's
``{"error": {...}}`` (``ErrorAnswer``) as ``application/json``, each status listing the ``code``
values it can carry, like every other route does for its problems."""

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

from iris.app.api.openai.errors import status_for
from iris.app.api.openai.wire import ErrorAnswer
from iris.app.api.openapi.codes import ALWAYS, AUTH, JSON_BODY
from iris.app.api.openapi.document import reference
from iris.app.api.openapi.operations import SSE, describe_from_docstring


def openai_documented(
    *,
    body: str | None = None,
    ok: str,
    chunks: str | None = None,
    errors: Mapping[int, Iterable[str]] | None = None,
) -> type[Operation]:
    """The operation class of a ``/v1`` route: ``ok`` names the JSON answer's component, ``chunks`` the
    component of each SSE ``data:`` line when the body asks to stream, ``errors`` the statuses and codes
    the route answers (authentication, a JSON body's and the database's are added)."""
    shared: list[Mapping[int, Iterable[str]]] = [ALWAYS, AUTH, errors or {}]
    if body is not None:
        shared.append(JSON_BODY)

    @dataclass
    class _Documented(Operation):
        def __post_init__(self) -> None:
            describe_from_docstring(self)
            if body is not None:
                self.request_body = RequestBody(
                    content={"application/json": OpenAPIMediaType(schema=reference(body))}, required=True
                )
            content = {"application/json": OpenAPIMediaType(schema=reference(ok))}
            if chunks is not None:  # a run that fails ends the stream with an error chunk instead
                content[SSE] = OpenAPIMediaType(
                    schema=Schema(one_of=[reference(chunks), reference(ErrorAnswer.__name__)])
                )
            description = (
                "OK"
                if chunks is None
                else (
                    "A `chat.completion`, or with `stream` server-sent events: each `data:` line one "
                    "`chat.completion.chunk` (or an `ErrorAnswer` if the run fails), then `data: [DONE]`."
                )
            )
            self.responses = {"200": OpenAPIResponse(description=description, content=content)}
            self.responses.update(_error_responses(shared))

    return _Documented


def _error_responses(sources: Iterable[Mapping[int, Iterable[str]]]) -> dict[str, OpenAPIResponse]:
    codes: dict[int, set[str]] = {}
    for source in sources:
        for status, listed in source.items():
            for code in listed:
                codes.setdefault(status_for(status, code), set()).add(code)
    return {
        str(status): OpenAPIResponse(
            description=HTTPStatus(status).phrase,
            content={
                "application/json": OpenAPIMediaType(
                    schema=Schema(
                        all_of=[
                            reference(ErrorAnswer.__name__),
                            Schema(
                                type=OpenAPIType.OBJECT,
                                properties={
                                    "error": Schema(
                                        type=OpenAPIType.OBJECT,
                                        properties={
                                            "code": Schema(
                                                type=OpenAPIType.STRING, enum=sorted(codes[status])
                                            )
                                        },
                                        required=["code"],
                                    )
                                },
                                required=["error"],
                            ),
                        ]
                    )
                )
            },
        )
        for status in sorted(codes)
    }

""":func:`documented`: the operation class of one route, with its request body, its success
answers (an AG-UI event stream or other content) and every problem status and code it can answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

from litestar.openapi.spec import (
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Reference,
    RequestBody,
    Schema,
)

from iris.app.api.openapi.codes import ALWAYS, AUTH, JSON_BODY, Problems
from iris.app.api.openapi.document import SSE_EVENT, markdown, reference
from iris.app.api.problems import PROBLEM_JSON, Problem

SSE = "text/event-stream"


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
            describe_from_docstring(self)
            if body is not None:
                self.request_body = RequestBody(
                    content={"application/json": OpenAPIMediaType(schema=reference(body))},
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
                    answer.content = {SSE: OpenAPIMediaType(schema=reference(SSE_EVENT)), **content}
                    answer.description = (
                        "AG-UI 1.0 events as server-sent events: each `data:` line is one `AgUiEvent`, "
                        "each `id:` its number in the run (send it back as `Last-Event-ID` to re-attach)."
                    )
                elif ok is not None:
                    answer.content = content
            for status, description in (empty or {}).items():
                answers[str(status)] = OpenAPIResponse(description=description)
            shared: list[Problems] = [ALWAYS, declared]
            if self.security:
                shared.append(AUTH)
            if isinstance(self.request_body, RequestBody) and "application/json" in self.request_body.content:
                shared.append(JSON_BODY)
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
                            reference(Problem.__name__),
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


def describe_from_docstring(operation: Operation) -> None:
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

"""``/v1/responses``: OpenAI's Responses API on the gateway's core, and its stored conversations.

A request is read into the same request in Chat Completions' terms
(:mod:`~iris.app.api.openai.responses_input`) and checked and run exactly as ``/v1/chat/completions``
is (:func:`iris.app.api.openai.convert.gateway_input`, then :func:`iris.app.runs.stateless_run` and
:class:`iris.app.runs.GatewayRun`); errors are OpenAI's shape, naming the Responses field. With
``store`` (the default) the answer is kept for its caller: ``previous_response_id`` continues it,
``GET``/``DELETE /v1/responses/{id}`` and ``/input_items`` read and remove it; nothing else is kept.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal

import msgspec
from litestar import Controller, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.agui.events import AgUiEvent, RunError, RunFinished
from iris.app.agui.sse import HEADERS
from iris.app.api.deps import RunContext
from iris.app.api.openai.convert import gateway_input
from iris.app.api.openai.docs import openai_documented
from iris.app.api.openai.errors import run_failure
from iris.app.api.openai.responses_events import ResponseDraft, stream_events
from iris.app.api.openai.responses_input import (
    PREVIOUS,
    ReadInput,
    read_input,
    referenced_ids,
    renamed,
    response_of_item,
)
from iris.app.api.openai.responses_wire import (
    DeletedResponse,
    InputItemList,
    ReasoningEcho,
    ResponseObject,
    ResponsesRequest,
    TextEcho,
    TextFormatPlain,
)
from iris.app.api.openai.routes import CHAT_CODES
from iris.app.errors import IrisError, NotFound, Unprocessable
from iris.app.persistence.models import GatewayResponse
from iris.app.persistence.repositories import GatewayResponseRepository, UploadRepository
from iris.app.runs import EventStream, GatewayRun, call_hold, observed, stateless_run
from iris.app.security.auth import Principal
from iris.app.security.quotas import admit_run

RESPONSE_CODES = {
    **CHAT_CODES,
    400: [*CHAT_CODES[400], "tool_type_unsupported", "unsupported_item", "item_not_found"],
    404: ["model_not_found", "response_not_found"],
}
_NOT_FOUND = {404: ["response_not_found"]}


class ResponsesController(Controller):
    """``/v1/responses``: OpenAI's Responses API, errors in OpenAI's shape."""

    path = "/v1/responses"
    tags = ["OpenAI-compatible"]
    security = [{"BearerToken": []}]
    signature_types = [RunContext, Principal, AsyncSession]

    @post(
        "/",
        operation_id="CreateResponse",
        status_code=200,
        operation_class=openai_documented(
            body="ResponsesRequest", ok="ResponseObject", errors=RESPONSE_CODES
        ),
    )
    async def create_response(
        self,
        data: JSONBody[ResponsesRequest],
        run_context: NamedDependency[RunContext],
        db_session: NamedDependency[AsyncSession],
    ) -> Stream | Response[Any]:
        """Answer ``input`` (after the stored ``previous_response_id``'s conversation) with ``model``
        (``provider/modelId``): a ``Response``, or with ``stream`` its semantic events
        (``event:``/``data:`` pairs, ``response.created`` … ``response.completed``). Kept for the caller
        unless ``store`` is false; ``tools`` are function tools the client runs."""
        run_manager, principal = run_context.run_manager, run_context.principal
        response_id = uuid.uuid4()
        read, run, previous = await _planned(data, run_context, db_session, response_id)
        await db_session.commit()  # counted before the vendor is called, whatever happens next
        draft = ResponseDraft(
            template=_template(data, response_id, run.model_ref), response_hex=response_id.hex
        )
        events = run.events()

        async def keep(answer: ResponseObject) -> None:
            if data.store and answer.status != "failed":
                maker = run_manager.services.alchemy.create_session_maker()
                async with maker() as session:  # a stream outlives the request's session
                    await _store(
                        GatewayResponseRepository(session=session), answer, read.items, principal, previous
                    )

        if not data.stream:
            return await _whole(draft, events, keep)
        early: list[AgUiEvent] = []  # until the model answers, a failure is still an HTTP error
        async for event in events:
            early.append(event)
            if isinstance(event, RunError):
                await events.aclose()  # type: ignore[attr-defined]
                return _failed(event)
            if isinstance(event, RunFinished) or draft.first_delta(event):
                break
        draft.template.model = run.model_ref  # the answering model, a fallback perhaps
        body = stream_events(draft, _chained(early, events), on_end=keep, queued=run.queued)
        observed_body = observed(body, run_manager.services.telemetry)  # counted as an open stream
        return EventStream(observed_body, media_type="text/event-stream", headers=HEADERS)

    @get(
        "/{responseId:str}",
        operation_id="GetResponse",
        operation_class=openai_documented(ok="ResponseObject", errors=_NOT_FOUND),
    )
    async def get_response(
        self,
        responseId: FromPath[str],  # noqa: N803 (the API's path names are camelCase)
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
    ) -> Response[Any]:
        """One of the caller's stored responses, as it was answered."""
        row = await _owned(
            responseId, principal, GatewayResponseRepository(session=db_session), "response_id"
        )
        return Response(row.body)

    @delete(
        "/{responseId:str}",
        operation_id="DeleteResponse",
        status_code=200,
        operation_class=openai_documented(ok="DeletedResponse", errors=_NOT_FOUND),
    )
    async def delete_response(
        self,
        responseId: FromPath[str],  # noqa: N803 (the API's path names are camelCase)
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
    ) -> DeletedResponse:
        """Forget one of the caller's stored responses (those that continued it stay readable)."""
        responses = GatewayResponseRepository(session=db_session)
        row = await _owned(responseId, principal, responses, "responseId")
        await responses.delete_owned(row.id, principal.user_id)
        await db_session.commit()
        return DeletedResponse(id=responseId)

    @get(
        "/{responseId:str}/input_items",
        operation_id="ListResponseInputItems",
        operation_class=openai_documented(
            ok="InputItemList", errors={**_NOT_FOUND, 400: ["validation_failed"]}
        ),
    )
    async def input_items(
        self,
        responseId: FromPath[str],  # noqa: N803 (the API's path names are camelCase)
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
        limit: FromQuery[int] = 20,
        order: FromQuery[Literal["asc", "desc"]] = "desc",
        after: FromQuery[str | None] = None,
    ) -> InputItemList:
        """A page of the input items a stored response was asked with (``limit`` 1 to 100, ``order``,
        ``after`` an item id)."""
        row = await _owned(
            responseId, principal, GatewayResponseRepository(session=db_session), "response_id"
        )
        items = row.input_items if order == "asc" else row.input_items[::-1]
        ids = [item["id"] for item in items]
        start = ids.index(after) + 1 if after in ids else 0
        page = items[start : start + max(1, min(limit, 100))]
        return InputItemList(
            data=page,
            first_id=page[0]["id"] if page else None,
            last_id=page[-1]["id"] if page else None,
            has_more=start + len(page) < len(items),
        )


async def _planned(
    data: ResponsesRequest, run_context: RunContext, db_session: AsyncSession, response_id: uuid.UUID
) -> tuple[ReadInput, GatewayRun, GatewayResponse | None]:
    """The request read (after its stored chain) and checked, as ``/v1/chat/completions`` checks its
    own, and its run, admitted (its budget hold taken) but not started; the model first, before the
    input is read (the request's subject)."""
    principal, settings = run_context.principal, run_context.settings
    responses = GatewayResponseRepository(session=db_session)
    models = await run_context.run_manager.services.catalogue.current(db_session)
    known = await models.get_by_ref(data.model)
    if known is None or not known.enabled:
        raise Unprocessable(f"No enabled model {data.model!r}.", code="model_not_found", field="model")
    previous = await _previous(data.previous_response_id, principal, responses)
    earlier = [item for row in await responses.chain(previous) for item in _items(row)] if previous else []
    read = read_input(data, earlier, await _referenced(data, principal, responses), response_id.hex)
    try:
        given = await gateway_input(
            read.chat,
            principal=principal,
            uploads=UploadRepository(session=db_session),
            policy=run_context.url_policy,
            settings=settings,
            limiter=run_context.decode_limiter,
        )
        plan = await stateless_run(
            data.model,
            given.history,
            principal=principal,
            models=models,
            registry=run_context.registry,
            settings=settings,
            model_field="model",
            tools=given.tools,
            request=given.request,
            reasoning=given.reasoning,
        )
    except IrisError as exc:
        raise renamed(exc, read.origins) from None
    plan, hold = call_hold(plan, "responses", settings)
    await admit_run(db_session, principal, settings, stored=False, hold=hold)
    return read, GatewayRun(plan, run_context.run_manager.services), previous


async def _whole(
    draft: ResponseDraft,
    events: AsyncIterator[AgUiEvent],
    keep: Callable[[ResponseObject], Awaitable[None]],
) -> Response[Any]:
    """Run to the end and answer the ``Response`` (kept first); a failed run is an HTTP error."""
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, RunError):
                return _failed(event)
            if isinstance(event, RunFinished):
                answer = draft.response(event)
                await keep(answer)
                return Response(answer)
            draft.take(event)
    raise RuntimeError("the run ended without a terminal event")


def _template(body: ResponsesRequest, response_id: uuid.UUID, model: str) -> ResponseObject:
    """The request's echo: what every state of the response repeats."""
    text_format = (
        body.text.format if body.text is not None and body.text.format is not None else TextFormatPlain()
    )
    effort = body.reasoning.effort if body.reasoning is not None else None
    summary = body.reasoning.summary if body.reasoning is not None else None
    return ResponseObject(
        id=f"resp_{response_id.hex}",
        created_at=int(time.time()),
        status="in_progress",
        model=model,
        output=[],
        parallel_tool_calls=body.parallel_tool_calls is not False,
        tool_choice=body.tool_choice or "auto",
        tools=list(body.tools or ()),
        text=TextEcho(format=text_format),
        reasoning=ReasoningEcho(effort=effort, summary=summary),
        store=body.store,
        instructions=body.instructions,
        max_output_tokens=body.max_output_tokens,
        previous_response_id=body.previous_response_id,
        temperature=body.temperature,
        top_p=body.top_p,
        user=body.user,
        metadata=dict(body.metadata or {}),
    )


def _items(row: GatewayResponse) -> list[dict[str, Any]]:
    """A stored response's conversation turn: what it was asked, then what it answered."""
    return [*row.input_items, *row.body.get("output", [])]


async def _owned(
    public_id: str, principal: Principal, responses: GatewayResponseRepository, field: str
) -> GatewayResponse:
    """The caller's stored response ``resp_<hex>``; 404 for any other id, as OpenAI answers it."""
    hex_id = public_id.removeprefix("resp_")
    row = None
    with contextlib.suppress(ValueError):
        if public_id.startswith("resp_") and len(hex_id) == 32:
            row = await responses.get_owned(uuid.UUID(hex_id), principal.user_id)
    if row is None:
        raise NotFound(f"Response with id '{public_id}' not found.", code="response_not_found", field=field)
    return row


async def _previous(
    previous_id: str | None, principal: Principal, responses: GatewayResponseRepository
) -> GatewayResponse | None:
    if previous_id is None:
        return None
    return await _owned(previous_id, principal, responses, PREVIOUS)


async def _referenced(
    body: ResponsesRequest, principal: Principal, responses: GatewayResponseRepository
) -> Mapping[str, Mapping[str, Any]]:
    """The stored items the request's ``item_reference``s name, by id (the caller's only)."""
    found: dict[str, Mapping[str, Any]] = {}
    rows: dict[uuid.UUID, GatewayResponse | None] = {}
    for wanted in referenced_ids(body):
        holder = response_of_item(wanted)
        if holder is None:
            continue
        if holder not in rows:
            rows[holder] = await responses.get_owned(holder, principal.user_id)
        row = rows[holder]
        found.update((item["id"], item) for item in (_items(row) if row else ()) if item.get("id") == wanted)
    return found


async def _store(
    responses: GatewayResponseRepository,
    answer: ResponseObject,
    items: list[dict[str, Any]],
    principal: Principal,
    previous: GatewayResponse | None,
) -> None:
    responses.add_response(
        uuid.UUID(answer.id.removeprefix("resp_")),
        owner_id=principal.user_id,
        previous_id=previous.id if previous else None,
        model_ref=answer.model,
        body=msgspec.to_builtins(answer),
        input_items=items,
    )
    await responses.session.commit()


def _failed(event: RunError) -> Response[bytes]:
    status, body = run_failure(event)
    headers = {"Retry-After": "1"} if status == 429 else None
    return Response(
        msgspec.json.encode(body), status_code=status, media_type="application/json", headers=headers
    )


async def _chained(first: list[AgUiEvent], rest: AsyncIterator[AgUiEvent]) -> AsyncIterator[AgUiEvent]:
    """``first``, then ``rest``; closing this closes ``rest`` (which cancels the run)."""
    async with contextlib.aclosing(rest):  # type: ignore[type-var]
        for event in first:
            yield event
        async for event in rest:
            yield event

"""``/v1/messages``: Anthropic's Messages API and ``count_tokens``, for any Anthropic client (the key is an
Iris token, as ``x-api-key`` or ``Authorization: Bearer``).

Stateless, like ``/v1/chat/completions``, and through the same core
(:func:`iris.app.runs.stateless.chat.stateless_run`: the model, its capabilities and limits, the knobs it
honours, the request budget) and the same engine (:class:`iris.app.runs.stateless.gateway.GatewayRun`:
deadlines, usage, reasoning, fallbacks); quotas count it as a run. Every ``anthropic-version`` and
``anthropic-beta`` header is accepted: the answer's shape is the same for all of them.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from litestar import Controller, Response, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.agui.events import AgUiEvent, RunError, RunFinished
from iris.app.agui.sse import HEADERS
from iris.app.api.anthropic.answer import Answer, stream_events
from iris.app.api.anthropic.convert import MessagesInput, Reader, messages_input
from iris.app.api.anthropic.docs import anthropic_documented
from iris.app.api.anthropic.errors import error_response, run_failure
from iris.app.api.anthropic.wire import AnthropicTokenCount, CountTokensRequest, MessagesRequest
from iris.app.api.deps import RunContext
from iris.app.persistence.repositories import UploadRepository
from iris.app.runs import (
    EventStream,
    GatewayRun,
    RunPlan,
    call_hold,
    estimate_input_tokens,
    observed,
    stateless_run,
)
from iris.app.security.quotas import admit_run

MESSAGES_CODES = {
    400: [
        "validation_failed",
        "malformed_body",
        "empty_message",
        "too_many_images",
        "too_many_document",
        "invalid_base64",
        "document_encrypted",
        "document_undecodable",
        "document_too_many_pages",
        "unsupported_media_type",
        "image_unreadable",
        "image_too_large",
        "attachment_url_rejected",
        "upload_not_found",
        "model_lacks_vision",
        "model_lacks_tools",
        "parameter_unsupported",
        "request_too_large",
        "unsupported_part",
        "image_type_not_accepted",
        "tool_call_unknown",
    ],
    403: ["model_not_for_guests"],
    404: ["model_not_found"],
    413: ["file_too_large", "request_too_large"],
    429: ["quota_exceeded", "provider_rate_limit"],
    500: ["provider_auth", "provider_bad_request", "provider_other", "provider_could_not_fetch_image"],
    504: ["provider_timeout", "provider_idle_timeout", "run_timeout"],
    529: ["provider_unavailable"],
}


class MessagesController(Controller):
    """``/v1/messages``: Anthropic's Messages API, errors in Anthropic's shape."""

    path = "/v1/messages"
    tags = ["Anthropic-compatible"]
    security = [{"BearerToken": []}]
    signature_types = [RunContext, AsyncSession]

    @post(
        "/",
        operation_id="CreateMessage",
        status_code=200,
        operation_class=anthropic_documented(
            body="MessagesRequest", ok="AnthropicMessage", streamed=True, errors=MESSAGES_CODES
        ),
    )
    async def create_message(
        self,
        data: JSONBody[MessagesRequest],
        run_context: NamedDependency[RunContext],
        db_session: NamedDependency[AsyncSession],
    ) -> Stream | Response[Any]:
        """Answer ``messages`` with ``model`` (``provider/modelId``): one ``message``, or with ``stream``
        Anthropic's server-sent events (``message_start`` … ``message_stop``). Images and PDFs are
        base64 or Iris's own signed URLs, checked like uploads; ``tools`` are the client's to run;
        ``thinking`` blocks go back to the vendor that signed them. Nothing is stored."""
        given = await messages_input(data, _reader(run_context, db_session))
        plan = await _plan(data.model, given, run_context, db_session)
        plan, hold = call_hold(plan, "messages", run_context.settings)
        await admit_run(db_session, run_context.principal, run_context.settings, stored=False, hold=hold)
        await db_session.commit()  # counted before the vendor is called, whatever happens next
        answer = Answer(message_id=f"msg_{uuid.uuid4().hex}", model=plan.model_ref)
        run = GatewayRun(plan, run_context.run_manager.services)
        events = run.events()
        if not data.stream:
            async with contextlib.aclosing(events):  # type: ignore[type-var]
                async for event in events:
                    answer.take(event)
                    if isinstance(event, RunError):
                        return error_response(*run_failure(event))
            return Response(answer.message())
        # Until the model answers anything, a failure is still an HTTP error the SDKs raise by status.
        early: list[AgUiEvent] = []
        probe = Answer(message_id=answer.message_id, model=answer.model)
        async for event in events:
            early.append(event)
            if isinstance(event, RunError):
                await events.aclose()  # type: ignore[attr-defined]
                return error_response(*run_failure(event))
            if isinstance(event, RunFinished) or probe.take(event):
                break
        answer.model = run.model_ref  # the answering model, a fallback perhaps: every event names it
        body = stream_events(
            answer, _chained(early, events), error=lambda e: run_failure(e)[1], queued=run.queued
        )
        observed_body = observed(body, run_context.run_manager.services.telemetry)  # an open stream
        return EventStream(observed_body, media_type="text/event-stream", headers=HEADERS)

    @post(
        "/count_tokens",
        operation_id="CountMessageTokens",
        status_code=200,
        operation_class=anthropic_documented(
            body="CountTokensRequest",
            ok="AnthropicTokenCount",
            errors={k: v for k, v in MESSAGES_CODES.items() if k < 429},
        ),
    )
    async def count_tokens(
        self,
        data: JSONBody[CountTokensRequest],
        run_context: NamedDependency[RunContext],
        db_session: NamedDependency[AsyncSession],
    ) -> AnthropicTokenCount:
        """Iris's estimate of the input tokens ``messages`` would cost ``model``: text by characters,
        images by the model's image formula, PDF pages by the vendor's published rate. The request is
        checked as ``/v1/messages`` checks it; no vendor is called and no quota is spent."""
        given = await messages_input(data, _reader(run_context, db_session))
        plan = await _plan(data.model, given, run_context, db_session)
        return AnthropicTokenCount(input_tokens=estimate_input_tokens(plan))


def _reader(run_context: RunContext, db_session: AsyncSession) -> Reader:
    return Reader(
        principal=run_context.principal,
        uploads=UploadRepository(session=db_session),
        policy=run_context.url_policy,
        settings=run_context.settings,
        limiter=run_context.decode_limiter,
    )


async def _plan(
    model: str, given: MessagesInput, run_context: RunContext, db_session: AsyncSession
) -> RunPlan:
    return await stateless_run(
        model,
        given.history,
        principal=run_context.principal,
        models=await run_context.run_manager.services.catalogue.current(db_session),
        registry=run_context.registry,
        settings=run_context.settings,
        model_field="model",
        tools=given.tools,
        request=given.request,
        reasoning=given.reasoning,
    )


async def _chained(first: list[AgUiEvent], rest: AsyncIterator[AgUiEvent]) -> AsyncIterator[AgUiEvent]:
    """``first``, then ``rest``; closing this closes ``rest`` (which cancels the run)."""
    async with contextlib.aclosing(rest):  # type: ignore[type-var]
        for event in first:
            yield event
        async for event in rest:
            yield event

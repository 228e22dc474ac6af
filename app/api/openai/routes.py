"""``/v1``: Chat Completions and the model list, for any OpenAI client (``api_key`` = an Iris token).

Stateless, like ``POST /api/llm/chat``, and through the same core
(:func:`iris.app.runs.stateless.chat.stateless_run`: the model, its capabilities and limits, the knobs it
honours, the request budget) and the same engine (:class:`iris.app.runs.stateless.gateway.GatewayRun`:
deadlines, usage, reasoning); quotas count it as a run.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.agui.events import AgUiEvent, RunError, RunFinished
from iris.app.agui.sse import HEADERS
from iris.app.api.anthropic.models import anthropic_model, anthropic_models, wants_anthropic
from iris.app.api.anthropic.wire import AnthropicModel, AnthropicModels
from iris.app.api.deps import RunContext
from iris.app.api.openai.chunks import Answer, stream_chunks
from iris.app.api.openai.convert import gateway_input
from iris.app.api.openai.docs import openai_documented
from iris.app.api.openai.errors import run_failure
from iris.app.api.openai.wire import ChatCompletionRequest, ModelCard, ModelCards
from iris.app.errors import NotFound
from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import ModelRepository, UploadRepository
from iris.app.runs import EventStream, GatewayRun, call_hold, observed, stateless_run
from iris.app.security.auth import Principal
from iris.app.security.quotas import admit_run

CHAT_CODES = {
    400: [
        "validation_failed",
        "malformed_body",
        "empty_message",
        "too_many_images",
        "too_many_document",
        "too_many_audio",
        "invalid_data_url",
        "invalid_base64",
        "file_source_unsupported",
        "document_encrypted",
        "document_undecodable",
        "document_too_many_pages",
        "audio_undecodable",
        "audio_out_of_range",
        "audio_too_long",
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
    403: ["model_not_for_guests", "key_model_forbidden"],
    404: ["model_not_found"],
    413: ["file_too_large", "request_too_large"],
    429: ["quota_exceeded", "budget_exceeded", "provider_rate_limit"],
    502: ["provider_auth", "provider_bad_request", "provider_other", "provider_could_not_fetch_image"],
    503: ["provider_unavailable", "provider_key_missing", "database_unavailable", "storage_unavailable"],
    504: ["provider_timeout", "provider_idle_timeout", "run_timeout"],
}


class OpenAIController(Controller):
    """``/v1``: OpenAI's Chat Completions and Models, errors in OpenAI's shape."""

    path = "/v1"
    tags = ["OpenAI-compatible"]
    security = [{"BearerToken": []}]
    signature_types = [
        RunContext,
        Principal,
        ModelRepository,
        AsyncSession,
    ]

    @post(
        "/chat/completions",
        operation_id="CreateChatCompletion",
        status_code=200,
        operation_class=openai_documented(
            body="ChatCompletionRequest", ok="ChatCompletion", chunks="ChatCompletionChunk", errors=CHAT_CODES
        ),
    )
    async def chat_completions(
        self,
        data: JSONBody[ChatCompletionRequest],
        run_context: NamedDependency[RunContext],
        db_session: NamedDependency[AsyncSession],
    ) -> Stream | Response[Any]:
        """Answer ``messages`` with ``model`` (``provider/modelId``): ``chat.completion.chunk`` server-sent
        events ending with ``data: [DONE]`` when ``stream``, else one ``chat.completion``. Images are
        ``data:`` URLs or Iris's own signed URLs; PDFs are ``file`` parts with ``file_data`` (a
        ``data:`` URL; a ``file_id`` is refused) and audio ``input_audio`` parts (WAV or MP3), each
        checked like an upload; ``tools`` are the client's to run. Nothing is stored."""
        principal, settings = run_context.principal, run_context.settings
        run_manager = run_context.run_manager
        given = await gateway_input(
            data,
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
            models=await run_manager.services.catalogue.current(db_session),
            registry=run_context.registry,
            settings=settings,
            model_field="model",
            tools=given.tools,
            request=given.request,
            reasoning=given.reasoning,
        )
        plan, hold = call_hold(plan, "chat-completions", settings)
        await admit_run(db_session, principal, settings, stored=False, hold=hold)
        await db_session.commit()  # counted before the vendor is called, whatever happens next
        answer = Answer(completion_id=f"chatcmpl-{uuid.uuid4().hex}", model=plan.model_ref)
        run = GatewayRun(plan, run_manager.services)
        events = run.events()
        if not data.stream:
            async with contextlib.aclosing(events):  # type: ignore[type-var]
                async for event in events:
                    answer.take(event)
                    if isinstance(event, RunError):
                        return _failed(event)
            return Response(answer.completion())
        # Until the model answers anything, a failure is still an HTTP error the SDKs raise by status.
        early: list[AgUiEvent] = []
        probe = Answer(completion_id=answer.completion_id, model=answer.model)
        async for event in events:
            early.append(event)
            if isinstance(event, RunError):
                await events.aclose()  # type: ignore[attr-defined]
                return _failed(event)
            if isinstance(event, RunFinished) or probe.take(event) is not None:
                break
        answer.model = run.model_ref  # the answering model, a fallback perhaps: every chunk names it
        include_usage = data.stream_options is not None and data.stream_options.include_usage
        body = stream_chunks(
            answer,
            _chained(early, events),
            include_usage=include_usage,
            error=lambda e: run_failure(e)[1],
            queued=run.queued,
        )
        observed_body = observed(body, run_manager.services.telemetry)  # counted as an open stream
        return EventStream(observed_body, media_type="text/event-stream", headers=HEADERS)

    @get("/models", operation_id="ListOpenAIModels", operation_class=openai_documented(ok="ModelCards"))
    async def list_models(
        self,
        request: Request[Any, Any, Any],
        principal: NamedDependency[Principal],
        model_repo: NamedDependency[ModelRepository],
    ) -> ModelCards | AnthropicModels:
        """The catalogue models the caller may use (``id`` = ``provider/modelId``); in Anthropic's list
        shape for a request that carries ``anthropic-version`` or ``x-api-key``."""
        rows = await _usable(principal, model_repo)
        if wants_anthropic(request):
            return anthropic_models(rows)
        return ModelCards(data=[_card(row) for row in rows])

    @get(
        "/models/{model:path}",
        operation_id="GetOpenAIModel",
        operation_class=openai_documented(ok="ModelCard", errors={404: ["model_not_found"]}),
    )
    async def get_model(
        self,
        request: Request[Any, Any, Any],
        model: FromPath[str],
        principal: NamedDependency[Principal],
        model_repo: NamedDependency[ModelRepository],
    ) -> ModelCard | AnthropicModel:
        """One model the caller may use (in Anthropic's shape for an Anthropic client); 404
        ``model_not_found`` for any other."""
        ref = model.lstrip("/")
        for row in await _usable(principal, model_repo):
            if row.ref == ref:
                return anthropic_model(row) if wants_anthropic(request) else _card(row)
        raise NotFound(
            f"The model {ref!r} does not exist or you do not have access to it.", code="model_not_found"
        )


async def _usable(principal: Principal, models: ModelRepository) -> Sequence[ModelRow]:
    if principal.is_guest:
        return await models.list_guest_visible()
    return await models.list_catalogue(include_disabled=False)


def _card(row: ModelRow) -> ModelCard:
    return ModelCard(id=row.ref, created=int(row.created_at.timestamp()), owned_by=row.provider)


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

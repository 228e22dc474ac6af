"""Stateless chat (``POST /api/llm/chat``): the run engine with the client's history and no storage.

The same checks apply — attachment URL policy (each image must be the caller's upload; its thread is
read from the URL), image limits, capabilities — and the same orchestrator streams the answer, but
the history is built in memory from the request and nothing is written: no session, run, message or
event row. No tools are offered. :func:`stateless_run` is the core this surface shares with the OpenAI
gateway (``iris.app.api.openai``), which also passes the client's tools, knobs and reasoning effort.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from litestar.response import Stream

from iris.app.agui.events import RunError, RunFinished, TextMessageEnd
from iris.app.agui.input import InboundUser, parse_messages
from iris.app.agui.sse import relay
from iris.app.catalogue.cache import ModelLookup
from iris.app.catalogue.views import model_spec
from iris.app.errors import BadGateway, Forbidden, IrisError, Unprocessable
from iris.app.media.pipeline import check_images
from iris.app.persistence.models import Message
from iris.app.persistence.repositories import UploadRepository
from iris.app.runs.content.attachments import check_new_attachments
from iris.app.runs.content.context import check_request_fits
from iris.app.runs.content.outputs import WORKER_OUTPUT_KEY
from iris.app.runs.content.parts import PartLimits, canonical_user_parts, image_parts
from iris.app.runs.content.reasoning import NO_REASONING, ReasoningControl, reasoning_control
from iris.app.runs.engine.orchestrator import Orchestrator
from iris.app.runs.engine.services import RunServices
from iris.app.runs.engine.streaming import observed, sse
from iris.app.runs.intake.chat_input import chat_field, message_content
from iris.app.runs.intake.fallbacks import Request, fallback_choices, retry_policy
from iris.app.runs.intake.knobs import NO_OPTIONS, check_parameters
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.intake.resolution import RunnableModel, runnable
from iris.app.runs.stateless.live_sink import LiveOnly
from iris.app.runs.stateless.settle import run_settled
from iris.app.runs.store.live import RunChannel
from iris.app.schemas.chat import LlmChatAnswer, LlmChatRequest
from iris.app.security.auth import Principal
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.app.threads import thread_from_segment
from iris.providers import RequestOptions, ToolSpec
from iris.providers.registry import ProviderRegistry

_THREAD_IN_PATH = re.compile(r"/agent-inputs/[^/]+/([^/]+)/uploads/")


async def stateless_plan(
    body: LlmChatRequest,
    *,
    principal: Principal,
    models: ModelLookup,
    uploads: UploadRepository,
    registry: ProviderRegistry,
    settings: Settings,
    policy: UrlPolicy,
) -> RunPlan:
    """Check the request and build the in-memory run it describes."""
    turns = [*(body.messages or []), None]  # None: the new message from parts/content
    history: list[Message] = []
    for index, turn in enumerate(turns):
        field = "parts" if turn is None else f"messages[{index}].content"
        role = "user" if turn is None else turn.role
        raw = message_content(body.parts, body.content) if turn is None else _as_parts(turn.content)
        if role != "user":
            text = "".join(str(p.get("text", "")) for p in raw if p.get("type") == "text")
            history.append(Message(role=role, content=text, parts=None, meta={}))
            continue
        try:
            (inbound,) = parse_messages([{"id": "m", "role": "user", "content": raw}])
            assert isinstance(inbound, InboundUser)
            parts = await canonical_user_parts(
                inbound.parts,
                user_id=principal.user_id,
                thread_id=thread_of(inbound.parts),
                policy=policy,
                uploads=uploads,
                limits=PartLimits.of(settings),
                field="messages[0]",
            )
        except IrisError as exc:
            raise chat_field(exc, field) from None
        text = "\n".join(p["text"] for p in parts if p["type"] == "text")
        history.append(Message(role="user", content=text, parts=parts, meta={}))
    return await stateless_run(
        body.model_id, history, principal=principal, models=models, registry=registry, settings=settings
    )


async def stateless_run(
    model_ref: str,
    history: Sequence[Message],
    *,
    principal: Principal,
    models: ModelLookup,
    registry: ProviderRegistry,
    settings: Settings,
    model_field: str = "modelId",
    tools: tuple[ToolSpec, ...] = (),
    request: RequestOptions = NO_OPTIONS,
    reasoning: Mapping[str, Any] | None = None,
) -> RunPlan:
    """The core both stateless surfaces share (``/api/llm/chat`` and the OpenAI gateway): the model
    (enabled, and open to guests if the caller is one), its image and request-size limits, the client's
    knobs against what it honours, all before any I/O. ``history`` holds unsaved rows (system rows
    become the system prompt); ``tools`` are the client's to run; ``reasoning`` is read like
    ``forwardedProps`` (``None``: no reasoning)."""
    model = await _model(model_ref, principal, models, registry, settings, model_field)
    row, caps = model.row, model.capabilities
    fits, control = _checked_request(model, history, tools, request, reasoning, settings)
    fallbacks = await fallback_choices(
        row,
        models=models,
        registry=registry,
        settings=settings,
        allowed=lambda fallback: not principal.is_guest or fallback.guest_visible,
        suits=fits.suits(
            lambda fallback: (
                NO_REASONING
                if reasoning is None
                else reasoning_control(
                    reasoning, fallback.row.options, fallback.capabilities, fallback.row.ref
                )
            )
        ),
    )
    kept, system = fits.history, fits.system
    return RunPlan(
        run_pk=uuid.uuid4(),  # ids of rows that are never written: nothing is stored
        run_id=str(uuid.uuid4()),
        session_pk=uuid.uuid4(),
        thread_id=str(uuid.uuid4()),
        owner_id=principal.user_id,
        provider=model.provider,
        model=model_spec(row),
        model_ref=row.ref,
        capabilities=caps,
        history=kept,
        deleted_uploads=frozenset(),
        system=system,
        server_tools=(),
        frontend_tools=tools,
        max_tool_iterations=settings.max_tool_iterations,
        resume=(),
        ignored_resume_ids=(),
        reasoning=control,
        request=request,
        retry=retry_policy(row, settings),
        fallbacks=fallbacks,
    )


async def _model(
    model_ref: str,
    principal: Principal,
    models: ModelLookup,
    registry: ProviderRegistry,
    settings: Settings,
    model_field: str,
) -> RunnableModel:
    """The model asked for: enabled, open to guests if the caller is one, its provider ready."""
    row = await models.get_by_ref(model_ref)
    if row is None or not row.enabled:
        raise Unprocessable(f"No enabled model {model_ref!r}.", code="model_not_found", field=model_field)
    if principal.is_guest and not row.guest_visible:
        raise Forbidden("Guests may not use this model.", code="model_not_for_guests")
    principal.check_model(row.ref)
    await registry.ready([row.provider])
    return runnable(row, registry, settings)


def _checked_request(
    model: RunnableModel,
    history: Sequence[Message],
    tools: tuple[ToolSpec, ...],
    request: RequestOptions,
    reasoning: Mapping[str, Any] | None,
    settings: Settings,
) -> tuple[Request, ReasoningControl]:
    """The request checked against the model (tools, knobs, images, attachments, its size), as the
    fallbacks check it too, and the model's reasoning control. System rows become the system prompt."""
    row, caps = model.row, model.capabilities
    if tools and not caps.tools:
        raise Unprocessable(f"{row.ref} cannot call tools.", code="model_lacks_tools", field="tools")
    check_parameters(caps, request, model_ref=row.ref)
    control = NO_REASONING if reasoning is None else reasoning_control(reasoning, row.options, caps, row.ref)
    check_images(caps, [p["mimeType"] for m in history for p in image_parts(m.parts)], model_ref=row.ref)
    check_new_attachments(history, caps, model_ref=row.ref)  # every message of a stateless call is new
    system = "\n\n".join(m.content for m in history if m.role == "system") or None
    check_request_fits(
        caps,
        history,
        system,
        tools,
        storage_publicly_reachable=settings.storage_publicly_reachable,
        model_ref=row.ref,
    )
    fits = Request(
        history=[m for m in history if m.role != "system"],
        deleted=frozenset(),
        system=system,
        tools=tools,
        new_images=[p["mimeType"] for m in history for p in image_parts(m.parts)],
        new_messages=history,
        first_capabilities=caps,
        options=request,
        wants_reasoning=control.request is not None,
        storage_publicly_reachable=settings.storage_publicly_reachable,
    )
    return fits, control


def stream_stateless(plan: RunPlan, services: RunServices, *, ping_seconds: float) -> Stream:
    """Stream the run; it lives only as long as the request (a client that leaves stops it)."""
    channel = RunChannel()
    subscription = channel.subscribe()
    task = asyncio.create_task(run_settled(Orchestrator(plan, services, LiveOnly(channel)), services))

    def close() -> None:
        channel.unsubscribe(subscription)
        task.cancel()  # nothing is stored, so nothing is lost

    body = relay(subscription, ping_seconds=ping_seconds, on_close=close)
    return sse(observed(body, services.telemetry))


async def answer_stateless(plan: RunPlan, services: RunServices) -> LlmChatAnswer:
    """Run to the end and answer ``{content, usage}``; a failed run is a 502 with the run's code."""
    sink = LiveOnly(RunChannel())
    await run_settled(Orchestrator(plan, services, sink), services)
    last = sink.events[-1]
    if isinstance(last, RunError):
        raise BadGateway(last.message, code=last.code or "provider_other")
    assert isinstance(last, RunFinished)
    answers = [
        e.metadata[WORKER_OUTPUT_KEY]["answer"]
        for e in sink.events
        if isinstance(e, TextMessageEnd) and e.metadata and WORKER_OUTPUT_KEY in e.metadata
    ]
    return LlmChatAnswer(content=answers[-1] if answers else "", usage=last.usage[0] if last.usage else None)


def _as_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else message_content(content, None)


def thread_of(parts: Sequence[object]) -> str:
    """The thread an image URL names (stateless chat has none of its own); the policy then checks the
    upload is the caller's in that thread. No URL, or none that parses: a thread no upload is in."""
    for part in parts:
        url = getattr(part, "url", None)
        match = _THREAD_IN_PATH.search(url or "")
        if match:
            return thread_from_segment(match.group(1)) or str(uuid.uuid4())
    return str(uuid.uuid4())

"""Seed 002's chat surface: the same run engine behind the web frontend's endpoints."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter
from litestar.response import Stream

from iris.app.api.deps import RunContext
from iris.app.api.history import read_history
from iris.app.api.openapi import RUN_CHECKS, documented
from iris.app.api.paging import AfterPosition, Offset
from iris.app.errors import IrisError
from iris.app.persistence.repositories import (
    AgentRepository,
    MessageRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.runs import (
    Intake,
    RunManager,
    SessionUsage,
    chat_field,
    chat_run_input,
    follow_stream,
    prepare_run,
    resume_point,
    session_out,
    session_usage,
    start_stream,
)
from iris.app.schemas.chat import ChatHistory, ChatRequest, SessionList
from iris.app.security.access import agent_by_slug, owned_agent_session
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.storage.base import Storage


class ChatController(Controller):
    """``/api/agents/{slug}/chat`` and the caller's sessions with that agent."""

    path = "/api/agents/{slug:str}"
    tags = ["Chat"]
    security = [{"BearerToken": []}]
    signature_types = [
        RunContext,
        Principal,
        Settings,
        Storage,
        RunManager,
        AgentRepository,
        SessionRepository,
        MessageRepository,
        RunRepository,
        UploadRepository,
    ]

    @post(
        "/chat",
        operation_id="Chat",
        status_code=200,
        operation_class=documented(
            body="ChatRequest",
            events=True,
            problems={
                **RUN_CHECKS,
                404: (*RUN_CHECKS[404], "message_not_found"),
                422: (
                    *RUN_CHECKS[422],
                    "invalid_thread_id",
                    "nothing_to_regenerate",
                    "part_type_unsupported",
                    "session_required",
                ),
            },
        ),
    )
    async def chat(
        self,
        slug: FromPath[str],
        data: JSONBody[ChatRequest],
        run_context: NamedDependency[RunContext],
    ) -> Stream:
        """Send a message (text and images) and stream the answer as AG-UI events; ``RUN_STARTED``
        carries the session id. ``editMessageId`` replaces a message and answers again from there;
        ``regenerate`` answers the last message again, with its original images."""
        run_input, rewind = chat_run_input(slug, data)
        context, settings, run_manager = run_context, run_context.settings, run_context.run_manager
        async with Intake(run_manager, settings) as intake:
            try:
                plan = await prepare_run(
                    run_input,
                    principal=context.principal,
                    request_id=context.request_id,
                    repos=intake.repos,
                    registry=context.registry,
                    settings=settings,
                    policy=context.url_policy,
                    toolbox=run_manager.services.toolbox,
                    storage=run_manager.services.storage,
                    rewind=rewind,
                )
            except IrisError as exc:
                raise chat_field(exc) from None
            return await start_stream(plan, intake, run_manager, ping_seconds=settings.sse_ping_seconds)

    @get(
        "/chat/stream",
        operation_id="ChatStream",
        operation_class=documented(
            events=True,
            empty={204: "No run is going on in this session."},
            problems={
                400: ["malformed_body"],  # no sessionId (Litestar's bare 400)
                404: ["agent_not_found", "thread_not_found"],
                422: ["invalid_event_id", "invalid_thread_id", "validation_failed"],
            },
        ),
    )
    async def stream(
        self,
        request: Request[Any, Any, Any],
        slug: FromPath[str],
        session_id: Annotated[str, QueryParameter(name="sessionId")],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        run_repo: NamedDependency[RunRepository],
        run_manager: NamedDependency[RunManager],
    ) -> Response[None] | Stream:
        """Re-attach to the session's running run (replay, then follow); 204 when nothing runs."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, session_id)
        run = await run_repo.active_for_session(session.id)
        if run is None:
            return Response(content=None, status_code=204)
        return follow_stream(
            run.external_id,
            run.id,
            run_manager,
            request.app.state.alchemy,
            after=resume_point(request.headers.get("last-event-id"), None),
            ping_seconds=settings.sse_ping_seconds,
        )

    @get(
        "/sessions",
        operation_id="ListSessions",
        operation_class=documented(problems={404: ["agent_not_found"], 422: ["validation_failed"]}),
    )
    async def sessions(
        self,
        slug: FromPath[str],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        limit: Annotated[int, QueryParameter(ge=1, le=200)] = 50,
        offset: Offset = 0,
        archived: FromQuery[bool] = False,
    ) -> SessionList:
        """The caller's sessions with this agent, pinned first, then the most recently active; archived
        ones only with ``?archived=true``. ``nextOffset`` is there when there are more."""
        agent = await agent_by_slug(agent_repo, slug)
        rows = await session_repo.list_for_owner(
            principal.user_id, agent.id, limit=limit + 1, offset=offset, archived=archived
        )
        return SessionList(
            sessions=[session_out(row) for row in rows[:limit]],
            next_offset=offset + limit if len(rows) > limit else None,
        )

    @get(
        "/sessions/{sessionId:str}/messages",
        operation_id="SessionMessages",
        operation_class=documented(
            problems={
                404: ["agent_not_found", "thread_not_found"],
                422: ["invalid_thread_id", "validation_failed"],
                503: ["storage_unavailable"],
            }
        ),
    )
    async def messages(
        self,
        slug: FromPath[str],
        sessionId: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        storage: NamedDependency[Storage],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        message_repo: NamedDependency[MessageRepository],
        upload_repo: NamedDependency[UploadRepository],
        include_superseded: Annotated[bool, QueryParameter(name="includeSuperseded")] = False,
        after: AfterPosition = -1,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 200,
    ) -> ChatHistory:
        """``{id, role, content, parts, createdAt}`` per message, images re-signed with ``expiresAt``."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, sessionId)
        page = await read_history(
            session,
            messages=message_repo,
            uploads=upload_repo,
            storage=storage,
            ttl_seconds=settings.signed_url_ttl_seconds,
            include_superseded=include_superseded,
            after=after,
            limit=limit,
        )
        return ChatHistory(
            session_id=session.thread_id,
            messages=page.chat_messages(),
            title=session.title,
            model_id=str(session.model_id) if session.model_id else None,
        )

    @get(
        "/sessions/{sessionId:str}/usage",
        operation_id="SessionUsage",
        operation_class=documented(
            problems={404: ["agent_not_found", "thread_not_found"], 422: ["invalid_thread_id"]}
        ),
    )
    async def usage(
        self,
        slug: FromPath[str],
        sessionId: FromPath[str],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        run_repo: NamedDependency[RunRepository],
    ) -> SessionUsage:
        """What the session's runs used, summed per provider+model, with the cost where priced (owner)."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, sessionId)
        return session_usage(session.thread_id, await run_repo.usage_for_session(session.id))

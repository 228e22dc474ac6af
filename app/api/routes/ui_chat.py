"""The AI SDK's ``useChat`` against Iris: the UI message stream protocol (v1) over the run engine.

``POST /api/agents/{slug}/ui-chat`` is what ``DefaultChatTransport`` sends; the answer is the same run
the chat surface starts, its AG-UI events translated into UI message chunks
(:mod:`iris.app.agui.ui_stream`). ``GET …/ui-chat/{id}/stream`` re-attaches (``reconnectToStream``; 204
when nothing runs) and ``GET …/ui-chat/{id}/messages`` gives ``useChat`` its initial ``messages``.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.spec import Reference
from litestar.params import FromPath, JSONBody
from litestar.response import Stream

from iris.app.agui.ui_stream import UiChunks
from iris.app.api.deps import RunContext
from iris.app.api.history import read_history
from iris.app.api.openapi import INLINE_MEDIA_CHECKS, RUN_CHECKS, documented
from iris.app.api.ui_history import ui_messages
from iris.app.errors import IrisError, NotFound
from iris.app.persistence.models import ChatSession
from iris.app.persistence.repositories import (
    AgentRepository,
    MessageRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.runs import Intake, RunManager, follow_stream, prepare_run, start_stream, ui_chat_run_input
from iris.app.schemas.ui_chat import UiChatRequest, UiMessageOut
from iris.app.security.access import owned_agent_session
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.storage.base import Storage

CHUNK = Reference(ref="#/components/schemas/UiMessageServerSentEvent")
_STREAM = {"text/event-stream": CHUNK}
_HISTORY_LIMIT = 500


class UiChatController(Controller):
    """``/api/agents/{slug}/ui-chat``: the chat surface in the AI SDK's own protocol."""

    path = "/api/agents/{slug:str}/ui-chat"
    tags = ["AI SDK"]
    security = [{"BearerToken": []}]
    signature_types = [RunContext, Principal, Settings, Storage, RunManager]

    @post(
        "/",
        operation_id="UiChat",
        status_code=200,
        operation_class=documented(
            body="UiChatRequest",
            ok=_STREAM,
            problems={
                **RUN_CHECKS,
                **{k: v for k, v in INLINE_MEDIA_CHECKS.items() if k != 422},
                422: (
                    *RUN_CHECKS[422],
                    *INLINE_MEDIA_CHECKS[422],
                    "invalid_thread_id",
                    "nothing_to_regenerate",
                    "part_type_unsupported",
                    "unsupported_media_type",
                ),
            },
        ),
    )
    async def send(
        self, slug: FromPath[str], data: JSONBody[UiChatRequest], run_context: NamedDependency[RunContext]
    ) -> Stream:
        """Answer the chat's new user message (or its answered approvals, or regenerate its last answer)
        as a UI message stream: ``data: <chunk>`` frames, ``data: [DONE]`` last. The chat ``id`` is the
        session, created on first use; only the last of ``messages`` is read."""
        asked = ui_chat_run_input(slug, data)
        context, settings, run_manager = run_context, run_context.settings, run_context.run_manager
        async with Intake(run_manager, settings, inline_images=True) as intake:
            try:
                plan = await prepare_run(
                    asked.run,
                    principal=context.principal,
                    request_id=context.request_id,
                    repos=intake.repos,
                    registry=context.registry,
                    settings=settings,
                    policy=context.url_policy,
                    toolbox=run_manager.services.toolbox,
                    storage=run_manager.services.storage,
                    rewind=asked.rewind,
                    inline=intake.inline,
                )
            except IrisError as exc:
                raise _ui_field(exc, len(data.messages) - 1) from None
            chunks = UiChunks(asked.continues)
            return await start_stream(
                plan, intake, run_manager, ping_seconds=settings.sse_ping_seconds, ui=chunks
            )

    @get(
        "/{chatId:str}/stream",
        operation_id="UiChatStream",
        operation_class=documented(
            ok=_STREAM,
            empty={204: "Nothing is running in this chat."},
            problems={404: ["agent_not_found"], 422: ["invalid_thread_id"]},
        ),
    )
    async def resume(
        self,
        request: Request[Any, Any, Any],
        slug: FromPath[str],
        chatId: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        run_repo: NamedDependency[RunRepository],
        run_manager: NamedDependency[RunManager],
    ) -> Response[None] | Stream:
        """The running answer's stream from its start (``reconnectToStream``), from any process; 204 when
        nothing runs (a chat not begun yet included: ``useChat`` resumes before its first message)."""
        session = await _chat(agent_repo, session_repo, principal, slug, chatId)
        run = None if session is None else await run_repo.active_for_session(session.id)
        if run is None:
            return Response(content=None, status_code=204)
        return follow_stream(
            run.external_id,
            run.id,
            run_manager,
            request.app.state.alchemy,
            after=0,
            ping_seconds=settings.sse_ping_seconds,
            ui=UiChunks(),
        )

    @get(
        "/{chatId:str}/messages",
        operation_id="UiChatMessages",
        operation_class=documented(
            problems={
                404: ["agent_not_found"],
                422: ["invalid_thread_id"],
                503: ["storage_unavailable"],
            }
        ),
    )
    async def messages(
        self,
        slug: FromPath[str],
        chatId: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        storage: NamedDependency[Storage],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        message_repo: NamedDependency[MessageRepository],
        upload_repo: NamedDependency[UploadRepository],
        run_repo: NamedDependency[RunRepository],
    ) -> list[UiMessageOut]:
        """The chat's active path as ``UIMessage[]`` (URLs signed for this read), for ``useChat({messages})``;
        ``[]`` for a chat not begun yet. A running answer is left out: resume its stream."""
        session = await _chat(agent_repo, session_repo, principal, slug, chatId)
        if session is None:
            return []
        page = await read_history(
            session,
            messages=message_repo,
            uploads=upload_repo,
            storage=storage,
            ttl_seconds=settings.signed_url_ttl_seconds,
            include_superseded=False,
            after=-1,
            limit=_HISTORY_LIMIT,
        )
        running = await run_repo.active_for_session(session.id)
        run_ids = await run_repo.external_ids({row.run_id for row in page.rows if row.run_id is not None})
        return ui_messages(
            page.rows, page.chat_messages(), run_ids, running=running.id if running is not None else None
        )


async def _chat(
    agents: AgentRepository, sessions: SessionRepository, principal: Principal, slug: str, chat_id: str
) -> ChatSession | None:
    """The caller's chat with this agent, or ``None`` when it has not begun (chats are made on first
    use); 404 for an unknown agent."""
    try:
        return await owned_agent_session(agents, sessions, principal, slug, chat_id)
    except NotFound as exc:
        if exc.code == "thread_not_found":
            return None
        raise


def _ui_field(exc: IrisError, last: int) -> IrisError:
    """The engine's field names as this body's: the chat ``id``, the last message's ``parts``."""
    if exc.code == "thread_agent_mismatch":
        return NotFound("No such chat with this agent.", code="thread_not_found", field="id")
    if exc.field is not None and exc.field.startswith("messages[0].content"):
        exc.field = f"messages[{last}].parts" + exc.field[len("messages[0].content") :]
    elif exc.field == "messages[0]":
        exc.field = f"messages[{last}]"
    elif exc.field == "threadId":
        exc.field = "id"
    elif exc.field is not None and exc.field.startswith("forwardedProps."):
        exc.field = exc.field[len("forwardedProps.") :]
    return exc

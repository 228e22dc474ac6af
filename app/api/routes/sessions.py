"""Conversations people keep: rename, pin and archive a session, switch between the versions of its
messages, take it out as JSON or Markdown and bring a JSON export back in, and search them all."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from litestar import Controller, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIType, Reference, Schema
from litestar.params import FromPath, JSONBody, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.api.openapi import documented
from iris.app.errors import Unprocessable
from iris.app.persistence.repositories import (
    AgentRepository,
    MessageRepository,
    RunRepository,
    SearchRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.persistence.search_indexer import SearchIndexer
from iris.app.persistence.search_text import snippet, words
from iris.app.runs import (
    RunManager,
    deleted_uploads,
    export_filename,
    export_markdown,
    import_session,
    offered_model,
    session_export,
    session_out,
    switch_line,
)
from iris.app.schemas.chat import SessionOut
from iris.app.schemas.session_export import SessionExport
from iris.app.schemas.sessions import (
    ActiveLineOut,
    ActiveMessageIn,
    SearchResult,
    SearchResults,
    SessionUpdate,
)
from iris.app.security.access import agent_by_slug, owned_agent_session
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.storage.base import Storage
from iris.app.storage.signing import sign_image_parts

_SESSION = {404: ["agent_not_found", "thread_not_found"], 422: ["invalid_thread_id"]}
_TYPES = [
    Principal,
    Settings,
    Storage,
    RunManager,
    AgentRepository,
    SessionRepository,
    MessageRepository,
    RunRepository,
    UploadRepository,
    SearchRepository,
    SearchIndexer,
    AsyncSession,
]


class SessionController(Controller):
    """``/api/agents/{slug}/sessions/…``: keeping one session."""

    path = "/api/agents/{slug:str}/sessions"
    tags = ["Sessions"]
    security = [{"BearerToken": []}]
    signature_types = _TYPES

    @patch(
        "/{sessionId:str}",
        operation_id="UpdateSession",
        operation_class=documented(
            problems={**_SESSION, 422: [*_SESSION[422], "validation_failed", "model_not_in_agent"]}
        ),
    )
    async def update(
        self,
        slug: FromPath[str],
        sessionId: FromPath[str],
        data: JSONBody[SessionUpdate],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
    ) -> SessionOut:
        """Rename, pin or archive a session, or choose the model it continues with (only the fields sent
        change). Pinned sessions come first in the list; archived ones leave it (``?archived=true``
        lists them) but stay searchable. ``modelId`` must be one of the agent's models (422
        ``model_not_in_agent``)."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, sessionId)
        model_id = None
        if not isinstance(data.model_id, msgspec.UnsetType):
            model_id = offered_model(await agent_by_slug(agent_repo, slug), data.model_id)
        title = None if isinstance(data.title, msgspec.UnsetType) else " ".join(data.title.split())
        if title == "":
            raise Unprocessable("A title needs a visible character.", field="title")
        await session_repo.update_flags(
            session,
            title=title,
            pinned=None if isinstance(data.pinned, msgspec.UnsetType) else data.pinned,
            archived=None if isinstance(data.archived, msgspec.UnsetType) else data.archived,
            model_id=model_id,
        )
        return session_out(session)

    @delete(
        "/{sessionId:str}",
        operation_id="DeleteSession",
        status_code=204,
        operation_class=documented(problems=_SESSION),
    )
    async def delete_session(
        self,
        slug: FromPath[str],
        sessionId: FromPath[str],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
    ) -> None:
        """Hide a session (soft delete: its messages are kept, and it leaves search)."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, sessionId)
        await session_repo.soft_delete(session)

    @post(
        "/{sessionId:str}/active",
        operation_id="SwitchBranch",
        status_code=200,
        operation_class=documented(
            problems={
                404: [*_SESSION[404], "message_not_found"],
                409: ["run_in_progress"],
                422: [*_SESSION[422], "interrupt_pending"],
            }
        ),
    )
    async def switch(
        self,
        slug: FromPath[str],
        sessionId: FromPath[str],
        data: JSONBody[ActiveMessageIn],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        session_repo: NamedDependency[SessionRepository],
        message_repo: NamedDependency[MessageRepository],
        run_repo: NamedDependency[RunRepository],
        run_manager: NamedDependency[RunManager],
    ) -> ActiveLineOut:
        """Show another version of a message: the session's active line becomes the newest line
        through ``messageId`` (any message of the session: an edit, a regenerated answer), and the
        next message continues from its end (``leafId``). History and the model see that line."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, sessionId)
        return await switch_line(
            session,
            data.message_id,
            messages=message_repo,
            runs=run_repo,
            running_here=run_manager.runs_thread(principal.user_id, session.thread_id),
        )

    @get(
        "/{sessionId:str}/export",
        operation_id="ExportSession",
        operation_class=documented(
            ok={
                "application/json": Reference(ref="#/components/schemas/SessionExport"),
                "text/markdown": Schema(type=OpenAPIType.STRING),
            },
            problems={**_SESSION, 422: [*_SESSION[422], "validation_failed"], 503: ["storage_unavailable"]},
        ),
    )
    async def export(
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
        export_format: Annotated[Literal["json", "markdown"], QueryParameter(name="format")] = "json",
    ) -> Response[bytes]:
        """Download a session: ``json`` is its whole tree (every version of every message, the active
        line, images as freshly signed URLs) and imports back; ``markdown`` is the active line to read,
        images as links."""
        session = await owned_agent_session(agent_repo, session_repo, principal, slug, sessionId)
        rows = await message_repo.every_message(session.id)
        signed = await sign_image_parts(
            storage, [p for row in rows for p in row.parts or ()], ttl_seconds=settings.signed_url_ttl_seconds
        )
        export = session_export(session, slug, rows, signed, deleted=await deleted_uploads(upload_repo, rows))
        if export_format == "markdown":
            body, media, name = (
                export_markdown(export).encode(),
                "text/markdown",
                export_filename(session, "md"),
            )
        else:
            body, media, name = (
                msgspec.json.encode(export),
                "application/json",
                export_filename(session, "json"),
            )
        return Response(
            content=body, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'}
        )

    @post(
        "/import",
        operation_id="ImportSession",
        status_code=201,
        operation_class=documented(
            problems={
                403: ["agent_not_for_guests"],
                404: ["agent_not_found"],
                422: ["import_attachment_unavailable", "import_invalid"],
                503: ["storage_unavailable"],
            }
        ),
    )
    async def import_(
        self,
        slug: FromPath[str],
        data: JSONBody[SessionExport],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        storage: NamedDependency[Storage],
        agent_repo: NamedDependency[AgentRepository],
        db_session: NamedDependency[AsyncSession],
    ) -> SessionOut:
        """Bring a JSON export back as a new session of yours with this agent: the same messages, tree
        and active line under a new session id. Refused whole (422) when anything does not validate;
        images must be your own uploads here, and are copied."""
        agent = await agent_by_slug(agent_repo, slug)
        session = await import_session(
            data, agent=agent, principal=principal, db=db_session, storage=storage, settings=settings
        )
        return session_out(session)


class SearchController(Controller):
    """``/api/sessions/search``: across every agent's sessions of the caller."""

    path = "/api/sessions"
    tags = ["Sessions"]
    security = [{"BearerToken": []}]
    signature_types = _TYPES

    @get(
        "/search",
        operation_id="SearchSessions",
        operation_class=documented(problems={400: ["malformed_body"], 422: ["validation_failed"]}),
    )
    async def search(
        self,
        principal: NamedDependency[Principal],
        search_repo: NamedDependency[SearchRepository],
        search_indexer: NamedDependency[SearchIndexer],
        q: Annotated[str, QueryParameter(min_length=1, max_length=200)],
        limit: Annotated[int, QueryParameter(ge=1, le=50)] = 20,
    ) -> SearchResults:
        """Search your conversations — titles, what was said, tool results and attachment names, as
        the conversations now stand (versions edited or regenerated away are left out) — best match
        first. Every word must match, each as the start of a word. A hit names the session and the
        message to jump to (none for a title) with a highlighted snippet."""
        terms = words(q)
        await search_indexer.catch_up()  # SQLite: what was written since the last batch, too
        hits = await search_repo.search(principal.user_id, terms, limit=limit)
        return SearchResults(
            results=[
                SearchResult(
                    session_id=hit.thread_id,
                    agent_slug=hit.agent_slug,
                    title=hit.title,
                    message_id=hit.message_id,
                    snippet=snippet(hit.body, terms),
                )
                for hit in hits
            ]
        )

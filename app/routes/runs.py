"""The AG-UI surface (seed 000): start a run, read a thread's history, discover capabilities."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Literal

from advanced_alchemy.exceptions import IntegrityError
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter
from litestar.response import Stream
from sqlalchemy.exc import IntegrityError as SAIntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.access import owned_session
from app.agui.capabilities import AgentCapabilities, agent_capabilities
from app.agui.input import RunAgentInput
from app.agui.sse import HEADERS, relay
from app.auth import Principal
from app.errors import Conflict, NotFound
from app.persistence.repositories import MessageRepository, SessionRepository, parse_uuid
from app.runs.history import history_message, stored_parts
from app.runs.intake import Repositories, prepare_run
from app.runs.manager import RunManager
from app.runs.tools import SERVER_TOOLS
from app.schemas.history import HistoryPage
from app.settings import Settings
from app.signing import sign_image_parts
from app.storage.base import Storage
from app.url_policy import UrlPolicy
from providers.registry import ProviderRegistry


class RunController(Controller):
    """``/agent/…``."""

    path = "/agent"
    tags = ["AG-UI"]
    signature_types = [
        Principal,
        Settings,
        Storage,
        ProviderRegistry,
        UrlPolicy,
        RunManager,
        Repositories,
        SessionRepository,
        MessageRepository,
        AsyncSession,
    ]

    @post("/runs", operation_id="RunAgent", status_code=200, security=[{"BearerToken": []}])
    async def run(
        self,
        data: JSONBody[RunAgentInput],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        registry: NamedDependency[ProviderRegistry],
        url_policy: NamedDependency[UrlPolicy],
        run_repositories: NamedDependency[Repositories],
        run_manager: NamedDependency[RunManager],
        db_session: NamedDependency[AsyncSession],
    ) -> Stream:
        """Run the agent on a thread; the answer streams as AG-UI 1.0 events (``text/event-stream``).

        Everything is checked before the stream opens (errors are problem+json); the new user
        messages and the run are committed before the first event. The run goes on if the client
        disconnects, and its results are in the thread's history.
        """
        plan = await prepare_run(
            data,
            principal=principal,
            repos=run_repositories,
            registry=registry,
            settings=settings,
            policy=url_policy,
        )
        try:
            await db_session.commit()
        except (IntegrityError, SAIntegrityError) as exc:  # a concurrent request took the runId first
            await db_session.rollback()
            raise Conflict("This runId was already used.", code="run_exists", field="runId") from exc
        channel, subscription = run_manager.start(plan)
        return Stream(
            relay(
                subscription,
                ping_seconds=settings.sse_ping_seconds,
                on_close=lambda: channel.unsubscribe(subscription),
            ),
            media_type="text/event-stream",
            headers=HEADERS,
        )

    @get("/threads/{thread_id:str}/messages", operation_id="ThreadHistory", security=[{"BearerToken": []}])
    async def history(
        self,
        thread_id: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        storage: NamedDependency[Storage],
        session_repo: NamedDependency[SessionRepository],
        message_repo: NamedDependency[MessageRepository],
        image_format: Annotated[Literal["binary", "ag-ui"], QueryParameter(name="format")] = "binary",
        after: FromQuery[int] = -1,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
        include_superseded: Annotated[bool, QueryParameter(name="includeSuperseded")] = False,
    ) -> HistoryPage:
        """A thread's messages, oldest first, images re-signed on every read (``?after=`` pages)."""
        thread = parse_uuid(thread_id)
        if thread is None:
            raise NotFound("No such thread.", code="thread_not_found")
        session = await owned_session(session_repo, principal, thread)
        rows = await message_repo.list_page(
            session.id, include_superseded=include_superseded, after_position=after, limit=limit
        )
        signed = await sign_image_parts(
            storage, stored_parts(rows), ttl_seconds=settings.signed_url_ttl_seconds
        )
        return HistoryPage(
            thread_id=str(session.id),
            messages=[history_message(row, signed, image_format=image_format) for row in rows],
            next_cursor=str(rows[-1].position) if len(rows) == limit else None,
        )

    @get("/capabilities", operation_id="AgentCapabilities")
    async def capabilities(self, settings: NamedDependency[Settings]) -> AgentCapabilities:
        """AG-UI ``AgentCapabilities``: what ``POST /agent/runs`` honours."""
        return agent_capabilities(
            version=version("iris"),
            server_tools=[tool.spec for tool in SERVER_TOOLS.values()],
            max_iterations=settings.max_tool_iterations,
        )

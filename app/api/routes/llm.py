"""Stateless chat (seed 002 §4.4): one model, the client's own history, nothing stored."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.openapi.spec import Reference
from litestar.params import JSONBody
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.api.deps import RunContext
from iris.app.api.openapi import STATELESS_CHECKS, documented
from iris.app.persistence.repositories import UploadRepository
from iris.app.runs import answer_stateless, call_hold, stateless_plan, stream_stateless
from iris.app.schemas.chat import LlmChatAnswer, LlmChatRequest
from iris.app.security.quotas import admit_run


class LlmController(Controller):
    """``POST /api/llm/chat``."""

    tags = ["Chat"]
    security = [{"BearerToken": []}]
    signature_types = [
        RunContext,
        AsyncSession,
    ]

    @post(
        "/api/llm/chat",
        operation_id="StatelessChat",
        status_code=200,
        operation_class=documented(
            body="LlmChatRequest",
            events=True,
            ok={"application/json": Reference(ref="#/components/schemas/LlmChatAnswer")},
            problems=STATELESS_CHECKS,
        ),
    )
    async def chat(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[LlmChatRequest],
        run_context: NamedDependency[RunContext],
        db_session: NamedDependency[AsyncSession],
    ) -> Stream | Response[LlmChatAnswer]:
        """Answer ``parts`` (or ``content``) after the given ``messages``: AG-UI events when ``stream``
        (the default), else ``{content, usage}``. Same URL policy and capability checks as every run."""
        principal, settings = run_context.principal, run_context.settings
        run_manager = run_context.run_manager
        plan = await stateless_plan(
            data,
            principal=principal,
            models=await run_manager.services.catalogue.current(db_session),
            uploads=UploadRepository(session=db_session),
            registry=run_context.registry,
            settings=settings,
            policy=run_context.url_policy,
        )
        plan, hold = call_hold(plan, "llm-chat", settings)
        await admit_run(db_session, principal, settings, stored=False, hold=hold)
        await db_session.commit()  # counted before the vendor is called, whatever happens next
        if data.stream:
            return stream_stateless(plan, run_manager.services, ping_seconds=settings.sse_ping_seconds)
        # Both branches are responses, so the handler imposes no media type of its own (a handler
        # media type would override the stream's ``text/event-stream``).
        return Response(await answer_stateless(plan, run_manager.services))

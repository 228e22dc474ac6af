"""The AG-UI surface (seed 000): start a run, read a thread's history, discover capabilities."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.agui.capabilities import AgentCapabilities, agent_capabilities
from iris.app.agui.input import RunAgentInput
from iris.app.api.deps import RunContext
from iris.app.api.history import read_history, run_snapshot, thread_snapshot
from iris.app.api.openapi import AGUI_INPUT_CODES, INLINE_MEDIA_CHECKS, RUN_CHECKS, documented
from iris.app.api.paging import AfterEvent, AfterPosition
from iris.app.catalogue.views import media_by_model, reasoning_by_model
from iris.app.errors import Conflict, Unprocessable
from iris.app.media.uploads import upload_limits
from iris.app.persistence.models import Run
from iris.app.persistence.repositories import (
    MessageRepository,
    ModelRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.runs import (
    Intake,
    RunManager,
    Toolbox,
    follow_stream,
    prepare_run,
    resume_point,
    start_stream,
)
from iris.app.schemas.history import HistoryPage, MessagesSnapshot
from iris.app.schemas.runs import CancelOut
from iris.app.security.access import owned_run, owned_session
from iris.app.security.auth import Principal
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.app.storage.base import Storage
from iris.app.threads import check_thread_id
from iris.providers.registry import ProviderRegistry


def _run_operation_id(_handler: object, _method: object, components: list[Any]) -> str:
    # One handler, two paths; OpenAPI needs an id per path.
    return "ResumeRun" if "resume" in components else "RunAgent"


class RunController(Controller):
    """``/agent/…``."""

    path = "/agent"
    tags = ["AG-UI"]
    signature_types = [
        RunContext,
        Principal,
        Settings,
        Storage,
        ProviderRegistry,
        UrlPolicy,
        RunManager,
        Toolbox,
        ModelRepository,
        SessionRepository,
        MessageRepository,
        RunRepository,
        UploadRepository,
        AsyncSession,
    ]

    @post(
        ["/runs", "/runs/resume"],
        operation_id=_run_operation_id,
        status_code=200,
        security=[{"BearerToken": []}],
        operation_class=documented(
            body="RunAgentInput",
            events=True,
            problems={
                **RUN_CHECKS,
                409: (*RUN_CHECKS[409], "thread_agent_mismatch"),
                413: INLINE_MEDIA_CHECKS[413],
                415: INLINE_MEDIA_CHECKS[415],
                422: (
                    *RUN_CHECKS[422],
                    *AGUI_INPUT_CODES,
                    *INLINE_MEDIA_CHECKS[422],
                    "invalid_id",
                    "invalid_thread_id",
                    "messages_diverge",
                    "protocol_version_unsupported",
                    "resume_required",
                    "tool_call_unknown",
                    "tool_name_conflict",
                ),
            },
        ),
    )
    async def run(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[RunAgentInput],
        run_context: NamedDependency[RunContext],
    ) -> Stream:
        """Run the agent on a thread; the answer streams as AG-UI 1.0 events (``text/event-stream``).

        Everything is checked before the stream opens (errors are problem+json); the new messages and
        the run are committed while the model is already being asked (a failed commit ends the stream
        with ``RUN_ERROR`` and stores nothing). The run goes on if the client disconnects: its
        results are in the thread's history, and ``GET /agent/runs/{runId}/events`` re-attaches.
        ``/agent/runs/resume`` continues a thread whose last run ended with interrupts and requires
        ``resume``: one entry per interrupt (``resolved`` runs the tool, ``cancelled`` skips it).
        """
        if request.url.path.endswith("/resume") and not data.resume:
            raise Unprocessable(
                "'resume' must list an answer for every open interrupt.",
                code="resume_required",
                field="resume",
            )
        context, settings, run_manager = run_context, run_context.settings, run_context.run_manager
        async with Intake(run_manager, settings) as intake:
            plan = await prepare_run(
                data,
                principal=context.principal,
                request_id=context.request_id,
                repos=intake.repos,
                registry=context.registry,
                settings=settings,
                policy=context.url_policy,
                toolbox=run_manager.services.toolbox,
                storage=run_manager.services.storage,
                inline=intake.inline,
            )
            return await start_stream(plan, intake, run_manager, ping_seconds=settings.sse_ping_seconds)

    @get(
        "/runs/{runId:str}/events",
        operation_id="RunEvents",
        security=[{"BearerToken": []}],
        operation_class=documented(
            events=True, problems={404: ["run_not_found"], 422: ["invalid_event_id", "validation_failed"]}
        ),
    )
    async def events(
        self,
        request: Request[Any, Any, Any],
        runId: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        run_repo: NamedDependency[RunRepository],
        run_manager: NamedDependency[RunManager],
        storage: NamedDependency[Storage],
        session_repo: NamedDependency[SessionRepository],
        message_repo: NamedDependency[MessageRepository],
        upload_repo: NamedDependency[UploadRepository],
        after: AfterEvent = 0,
        snapshot: Annotated[Literal["messages"] | None, QueryParameter()] = None,
    ) -> Stream:
        """Re-attach to a run (an extension: AG-UI 1.0 has no resumption): its events after
        ``Last-Event-ID`` (or ``?after=``), then live ones until the terminal event, each once, with
        the same ``id:`` numbers. Works from any process that shares the database; on the process
        running it, also before its intake commit has landed. ``?snapshot=messages``: a stream that
        replays the run from its start has, right after ``RUN_STARTED``, one ``MESSAGES_SNAPSHOT`` (no
        ``id:``) holding the conversation up to the run's own input; its events add the rest."""
        point = resume_point(request.headers.get("last-event-id"), after)
        run_pk = run_manager.executing(runId, principal.user_id)
        payload: bytes | None = None
        run: Run | None = None
        if snapshot is not None and point == 0:
            await run_manager.intake_settled(runId)  # the run's input is in the thread
            run = await owned_run(run_repo, principal, runId)
            thread = await session_repo.get(run.session_id)
            payload = msgspec.json.encode(
                await run_snapshot(
                    run,
                    thread.active_leaf_id,
                    messages=message_repo,
                    uploads=upload_repo,
                    storage=storage,
                    ttl_seconds=settings.signed_url_ttl_seconds,
                )
            )
        if run_pk is None:
            run_pk = (run or await owned_run(run_repo, principal, runId)).id
        return follow_stream(
            runId,
            run_pk,
            run_manager,
            request.app.state.alchemy,
            after=point,
            ping_seconds=settings.sse_ping_seconds,
            snapshot=payload,
        )

    @post(
        "/runs/{runId:str}/cancel",
        operation_id="CancelRun",
        status_code=202,
        security=[{"BearerToken": []}],
        operation_class=documented(problems={404: ["run_not_found"], 409: ["run_not_running"]}),
    )
    async def cancel(
        self,
        runId: FromPath[str],
        principal: NamedDependency[Principal],
        run_repo: NamedDependency[RunRepository],
        run_manager: NamedDependency[RunManager],
        db_session: NamedDependency[AsyncSession],
    ) -> CancelOut:
        """Stop a running run, whichever process runs it: its stream ends with ``RUN_FINISHED``
        outcome ``cancelled``. 409 ``run_not_running`` once it has ended."""
        if run_manager.executing(runId, principal.user_id) is not None and run_manager.cancel(runId):
            return CancelOut(run_id=runId, status="cancelling")  # here, perhaps not committed yet: at once
        run = await owned_run(run_repo, principal, runId)
        if not await run_repo.request_cancel(run.id):
            raise Conflict("The run is not running.", code="run_not_running")
        await db_session.commit()
        run_manager.cancel(runId)  # at once when it runs here; elsewhere its process sees the request
        return CancelOut(run_id=runId, status="cancelling")

    @get(
        "/threads/{threadId:str}/messages",
        operation_id="ThreadHistory",
        security=[{"BearerToken": []}],
        operation_class=documented(
            problems={
                404: ["thread_not_found"],
                422: ["invalid_thread_id", "snapshot_not_paged", "validation_failed"],
                503: ["storage_unavailable"],
            }
        ),
    )
    async def history(
        self,
        threadId: FromPath[str],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        storage: NamedDependency[Storage],
        session_repo: NamedDependency[SessionRepository],
        message_repo: NamedDependency[MessageRepository],
        upload_repo: NamedDependency[UploadRepository],
        image_format: Annotated[Literal["binary", "ag-ui"], QueryParameter(name="format")] = "binary",
        after: AfterPosition = -1,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
        include_superseded: Annotated[bool, QueryParameter(name="includeSuperseded")] = False,
        snapshot: Annotated[Literal["messages"] | None, QueryParameter()] = None,
    ) -> HistoryPage | MessagesSnapshot:
        """A thread's messages, oldest first, images re-signed on every read (``?after=`` pages).
        ``?snapshot=messages``: the whole active line as one AG-UI ``MESSAGES_SNAPSHOT`` event (parts as
        with ``?format=ag-ui``; not paged, so ``after`` and ``includeSuperseded`` are refused)."""
        session = await owned_session(session_repo, principal, check_thread_id(threadId))
        if snapshot is not None:
            if after >= 0 or include_superseded:
                raise Unprocessable(
                    "A snapshot is the whole active line: it takes no 'after' or 'includeSuperseded'.",
                    code="snapshot_not_paged",
                )
            return await thread_snapshot(
                session,
                messages=message_repo,
                uploads=upload_repo,
                storage=storage,
                ttl_seconds=settings.signed_url_ttl_seconds,
            )
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
        return HistoryPage(
            thread_id=session.thread_id,
            messages=page.agui_messages(image_format),
            next_cursor=str(page.rows[-1].position) if len(page.rows) == limit else None,
        )

    @get("/capabilities", operation_id="AgentCapabilities", operation_class=documented())
    async def capabilities(
        self,
        settings: NamedDependency[Settings],
        model_repo: NamedDependency[ModelRepository],
        registry: NamedDependency[ProviderRegistry],
        toolbox: NamedDependency[Toolbox],
    ) -> AgentCapabilities:
        """AG-UI ``AgentCapabilities``: what ``POST /agent/runs`` honours (reasoning per enabled model;
        PDFs and audio where an enabled model reads them natively)."""
        pdf, audio = await media_by_model(model_repo, registry)
        return agent_capabilities(
            version=version("iris"),
            server_tools=[
                tool.spec for name in toolbox.registry.names if (tool := toolbox.plugin_tool(name))
            ],
            max_iterations=settings.max_tool_iterations,
            reasoning=await reasoning_by_model(model_repo, registry),
            upload_limits=upload_limits(settings),
            pdf=pdf,
            audio=audio,
        )

"""Ownership checks, in one place. Someone else's resource is reported exactly like a missing one."""

from __future__ import annotations

from uuid import UUID

from iris.app.errors import NotFound
from iris.app.persistence.models import Agent, ChatSession, Run, Upload
from iris.app.persistence.repositories import (
    AgentRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.security.auth import Principal
from iris.app.threads import check_thread_id


async def owned_session(sessions: SessionRepository, principal: Principal, thread_id: str) -> ChatSession:
    """The caller's live session with this ``threadId``, or 404 ``thread_not_found``."""
    session = await sessions.get_owned(thread_id, principal.user_id)
    if session is None:
        raise NotFound("No such thread.", code="thread_not_found")
    return session


async def agent_by_slug(agents: AgentRepository, slug: str) -> Agent:
    """The agent of a chat-surface path, or 404 ``agent_not_found``."""
    agent = await agents.get_by_slug(slug)
    if agent is None:
        raise NotFound(f"No agent '{slug}'.", code="agent_not_found")
    return agent


async def owned_agent_session(
    agents: AgentRepository, sessions: SessionRepository, principal: Principal, slug: str, session_id: str
) -> ChatSession:
    """The caller's live session with this agent (a chat-surface ``sessionId``), or 404 (someone
    else's, or another agent's, looks the same as none)."""
    agent = await agent_by_slug(agents, slug)
    session = await owned_session(sessions, principal, check_thread_id(session_id, field="sessionId"))
    if session.agent_id != agent.id:
        raise NotFound("No such thread.", code="thread_not_found")
    return session


async def owned_upload(uploads: UploadRepository, principal: Principal, upload_id: UUID) -> Upload:
    """The caller's upload with this id, or 404 ``upload_not_found``."""
    upload = await uploads.get_owned(upload_id, principal.user_id)
    if upload is None:
        raise NotFound("No such upload.", code="upload_not_found")
    return upload


async def owned_run(runs: RunRepository, principal: Principal, run_id: str) -> Run:
    """The caller's run with this client ``runId``, or 404 ``run_not_found``."""
    run = await runs.get_by_external_id(run_id)
    if run is None or run.owner_id != principal.user_id:
        raise NotFound("No such run.", code="run_not_found")
    return run

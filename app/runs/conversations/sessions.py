"""Keeping a conversation: its entry in the sessions list, and switching which line of its tree is
shown and continued (:mod:`iris.app.runs.conversations.branches`)."""

from __future__ import annotations

from uuid import UUID

from iris.app.errors import Conflict, NotFound, Unprocessable
from iris.app.persistence.models import Agent, ChatSession
from iris.app.persistence.repositories import MessageRepository, RunRepository
from iris.app.runs.conversations.branches import Tree
from iris.app.schemas.chat import SessionOut
from iris.app.schemas.sessions import ActiveLineOut


def session_out(row: ChatSession) -> SessionOut:
    """A session as the sessions list shows it."""
    return SessionOut(
        id=row.thread_id,
        title=row.title,
        created_at=row.created_at,
        last_activity_at=row.last_activity_at,
        pinned=row.pinned,
        archived=row.archived_at is not None,
        model_id=str(row.model_id) if row.model_id else None,
    )


def offered_model(agent: Agent, model_id: str) -> UUID:
    """The catalogue id of a model the agent offers, for a session to continue with; 422
    ``model_not_in_agent`` otherwise (a chat keeps to its agent's models)."""
    try:
        wanted = UUID(model_id)
    except ValueError:
        wanted = None
    offered = {str(m) for m in agent.model_ids} | (
        {str(agent.default_model_id)} if agent.default_model_id else set()
    )
    if wanted is None or str(wanted) not in offered:
        raise Unprocessable(
            f"The agent {agent.slug!r} does not offer the model {model_id!r}.",
            code="model_not_in_agent",
            field="modelId",
        )
    return wanted


async def switch_line(
    session: ChatSession,
    message_id: str,
    *,
    messages: MessageRepository,
    runs: RunRepository,
    running_here: bool,
) -> ActiveLineOut:
    """Show (and continue) the newest line through ``message_id``: that message, its newest reply,
    that one's newest reply, and so on. Refused while a run is going (409 ``run_in_progress``: its
    answer belongs to the line it started on) or an approval is open (422 ``interrupt_pending``: it is
    answered on its own line)."""
    latest = await runs.latest_for_session(session.id)
    if running_here or (latest is not None and latest.status == "running"):
        raise Conflict("A run is in progress on this session; switch when it ends.", code="run_in_progress")
    if latest is not None and latest.pending_interrupts:
        raise Unprocessable(
            "This session is waiting for an approval: answer it before switching.",
            code="interrupt_pending",
            extra={"interruptIds": [i.get("id") for i in latest.pending_interrupts]},
        )
    target = await messages.get_in_session(session.id, message_id)
    if target is None:
        raise NotFound("No such message in this session.", code="message_not_found", field="messageId")
    tree = Tree.of(await messages.tree(session.id))
    leaf = tree.newest_leaf(target.id)
    if leaf != session.active_leaf_id:
        await messages.move_line(session.id, tree.line_to(leaf))
        session.active_leaf_id = leaf
        await messages.session.flush()
    return ActiveLineOut(
        session_id=session.thread_id,
        message_id=tree.rows[target.id].shown_id,
        leaf_id=tree.rows[leaf].shown_id,
    )

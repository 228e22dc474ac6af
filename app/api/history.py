"""A page of a thread's stored history, read once for both HTTP surfaces that show it: the AG-UI
history (``GET /agent/threads/{threadId}/messages``) and the chat surface's
(``GET /api/agents/{slug}/sessions/{sessionId}/messages``). Each renders the same page in its own shape
(:mod:`iris.app.runs.conversations.history`): the rows, their images and thumbnails signed in one storage
call, the
uploads deleted since, and the thread's tree (which branch each message is on)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from iris.app.agui.events import now_ms
from iris.app.persistence.models import ChatSession, Message, Run
from iris.app.persistence.repositories import MessageRepository, UploadRepository
from iris.app.runs import HistoryFormat, Tree, chat_message, deleted_uploads, history_messages, stored_parts
from iris.app.schemas.chat import ChatMessageOut
from iris.app.schemas.history import HistoryMessage, MessagesSnapshot
from iris.app.storage.base import SignedUrl, Storage
from iris.app.storage.signing import sign_image_parts


@dataclass(frozen=True, slots=True)
class StoredHistory:
    """One page of stored messages, oldest first, with what rendering them needs."""

    rows: Sequence[Message]
    signed: Mapping[str, SignedUrl]
    deleted: frozenset[str]
    tree: Tree

    def agui_messages(self, image_format: HistoryFormat) -> list[HistoryMessage]:
        """The page as the AG-UI history shows it (a row may be several messages)."""
        return [
            message
            for row in self.rows
            for message in history_messages(
                row, self.signed, image_format=image_format, deleted=self.deleted, tree=self.tree
            )
        ]

    def chat_messages(self) -> list[ChatMessageOut]:
        """The page as the chat surface shows it, one message per row."""
        return [chat_message(row, self.signed, deleted=self.deleted, tree=self.tree) for row in self.rows]


async def read_history(
    session: ChatSession,
    *,
    messages: MessageRepository,
    uploads: UploadRepository,
    storage: Storage,
    ttl_seconds: int,
    include_superseded: bool,
    after: int,
    limit: int,
) -> StoredHistory:
    """The page of ``session``'s history after position ``after`` (at most ``limit`` rows), its images
    signed for ``ttl_seconds``."""
    rows = await messages.list_page(
        session.id, include_superseded=include_superseded, after_position=after, limit=limit
    )
    tree = Tree.of(await messages.tree(session.id))
    return await _stored(rows, tree, uploads=uploads, storage=storage, ttl_seconds=ttl_seconds)


async def _stored(
    rows: Sequence[Message], tree: Tree, *, uploads: UploadRepository, storage: Storage, ttl_seconds: int
) -> StoredHistory:
    signed = await sign_image_parts(storage, stored_parts(rows), ttl_seconds=ttl_seconds)
    return StoredHistory(rows=rows, signed=signed, deleted=await deleted_uploads(uploads, rows), tree=tree)


async def thread_snapshot(
    session: ChatSession,
    *,
    messages: MessageRepository,
    uploads: UploadRepository,
    storage: Storage,
    ttl_seconds: int,
) -> MessagesSnapshot:
    """The thread's active line as one AG-UI ``MESSAGES_SNAPSHOT`` (``?snapshot=messages``)."""
    rows = await messages.active_history(session.id)
    tree = Tree.of(await messages.tree(session.id))
    page = await _stored(rows, tree, uploads=uploads, storage=storage, ttl_seconds=ttl_seconds)
    return MessagesSnapshot(messages=page.agui_messages("ag-ui"), timestamp=now_ms())


async def run_snapshot(
    run: Run,
    active_leaf: UUID | None,
    *,
    messages: MessageRepository,
    uploads: UploadRepository,
    storage: Storage,
    ttl_seconds: int,
) -> MessagesSnapshot:
    """The conversation as it stood when ``run`` began, its own input included, as one AG-UI
    ``MESSAGES_SNAPSHOT``: the line from the first message to the run's last user message (a resume run
    has none: to the message its answers follow, or the thread's end while it has written none). The
    run's events then add what it answered, so a client that applies both has the thread once."""
    written = await messages.of_run(run.id)
    users = [pk for pk, role, _ in written if role == "user"]
    anchor = users[-1] if users else written[0][2] if written else active_leaf
    tree = Tree.of(await messages.tree(run.session_id))
    rows = await messages.in_order(tree.line_to(anchor))
    page = await _stored(rows, tree, uploads=uploads, storage=storage, ttl_seconds=ttl_seconds)
    return MessagesSnapshot(messages=page.agui_messages("ag-ui"), timestamp=now_ms())

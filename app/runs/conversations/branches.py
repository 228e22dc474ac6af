"""A session's messages as a tree, and which line of it a run continues.

Every message follows a parent (``None`` for a first message), so an edit adds a sibling of the edited
message and a regeneration a sibling of the answer. The session's *active line* is the path from a
first message to its active leaf: it is what history shows and the model sees. Moving to another line
marks the messages that leave it superseded and clears the mark on those that join it (see
:class:`iris.app.persistence.models.Message`), in the caller's transaction.

Where a run continues from (:func:`branch_point`): a chat edit from the edited message's parent, a
regeneration from the last user message, and an AG-UI client from the last stored message it sends
before its new ones — the active leaf unless the client's copy of the thread ends elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from iris.app.agui.input import InboundMessage, InboundOther, InboundTool, InboundUser
from iris.app.errors import Unprocessable
from iris.app.persistence.models import Message
from iris.app.persistence.repositories import MessageRepository, TreeRow


@dataclass(slots=True)
class Tree:
    """A session's messages by id, with each one's children in the order they were written."""

    rows: dict[UUID, TreeRow] = field(default_factory=dict)
    children: dict[UUID | None, list[UUID]] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Sequence[TreeRow]) -> Tree:
        tree = cls()
        for row in sorted(rows, key=lambda r: r.position):
            tree.rows[row.id] = row
            tree.children.setdefault(row.parent_id, []).append(row.id)
        return tree

    def siblings(self, pk: UUID) -> list[UUID]:
        """The versions of a message: every message with its parent, itself included, oldest first."""
        row = self.rows.get(pk)
        return [pk] if row is None else self.children.get(row.parent_id, [pk])

    def line_to(self, pk: UUID | None) -> list[UUID]:
        """The ids from a first message down to ``pk`` (empty for ``None``)."""
        line: list[UUID] = []
        while pk is not None and pk in self.rows:
            line.append(pk)
            pk = self.rows[pk].parent_id
        return line[::-1]

    def versions(self, pk: UUID) -> tuple[list[str], int]:
        """A message's versions as history shows them: their ids, oldest first, and where it is."""
        siblings = self.siblings(pk)
        return [self.rows[s].shown_id if s in self.rows else str(s) for s in siblings], siblings.index(pk)

    def newest_leaf(self, pk: UUID) -> UUID:
        """The end of ``pk``'s newest line: its newest reply, that one's newest reply, and so on."""
        while self.children.get(pk):
            pk = self.children[pk][-1]
        return pk


@dataclass(frozen=True, slots=True)
class BranchPoint:
    """Where a run's new messages go: after ``base`` (``None``: as a first message). ``cited`` are the
    stored messages the client sent before its new ones; they must lie on the line to ``base``."""

    base: UUID | None
    cited: tuple[tuple[str, UUID], ...] = ()


def branch_point(
    inbound: Sequence[InboundMessage], known: Mapping[str, UUID], live: Sequence[Message], *, resuming: bool
) -> BranchPoint | None:
    """Where an AG-UI client's messages continue the thread; ``None``: from the active leaf.

    The client's list is the conversation as it sees it: its last stored message before the first new
    one is where the new ones go. The leaf (or no stored message at all) continues the active line; so
    does a message of the active line followed there only by answers (assistant and tool messages),
    which a client need not keep. Otherwise — a user message of the line is missing after it, or it is
    on another branch — a branch starts there. With no new message, a client whose list ends at a stored
    user or tool message other than the leaf asks for it to be answered again. A stored message after a
    new one is ambiguous (422 ``messages_diverge``), as are stored messages off the line to the branch
    point (checked by :func:`line_from`). A resume always continues the active line.
    """
    fresh = [
        i for i, m in enumerate(inbound) if isinstance(m, InboundUser | InboundTool) and m.id not in known
    ]
    first_new = fresh[0] if fresh else len(inbound)
    late = next((m for m in inbound[first_new:] if m.id in known), None)
    if late is not None:
        raise Unprocessable(
            "A message the thread already holds comes after a new one: send the thread as it is, then "
            "the new messages.",
            code="messages_diverge",
            field=late.field,
        )
    cited = [(m.field, known[m.id]) for m in inbound[:first_new] if m.id in known]
    if not cited or resuming or (live and cited[-1][1] == live[-1].id):
        return None
    base = cited[-1][1]
    on_live = next((i for i, row in enumerate(live) if row.id == base), None)
    if fresh:
        if on_live is not None and all(row.role != "user" for row in live[on_live + 1 :]):
            return None  # only answers the client does not keep follow it: go on from the leaf
    elif isinstance(inbound[first_new - 1], InboundOther):
        return None  # the client's copy ends at an answer: nothing to answer again
    return BranchPoint(base=base, cited=tuple(cited))


async def line_from(
    messages: MessageRepository,
    session_id: UUID,
    live: Sequence[Message],
    point: BranchPoint,
) -> list[Message]:
    """The line a run continues: the path to ``point.base``, made the active line (in the caller's
    transaction; the caller moves the session's leaf). A base on the live line cuts it short (what
    followed is superseded); any other base brings its path back."""
    on_live = next((i for i, row in enumerate(live) if row.id == point.base), None)
    if point.base is None or on_live is not None:
        line = list(live[: on_live + 1]) if on_live is not None else []
        ids = [row.id for row in line]
    else:
        ids = Tree.of(await messages.tree(session_id)).line_to(point.base)
        line = await messages.in_order(ids)
    on_line = set(ids)
    stray = next((name for name, pk in point.cited if pk not in on_line), None)
    if stray is not None:
        raise Unprocessable(
            "The messages mix two versions of the thread: send the messages of one line of it.",
            code="messages_diverge",
            field=stray,
        )
    if len(line) != len(live) or on_live is None:
        await messages.move_line(session_id, ids)
    return line


def leaf_of(line: Sequence[Message], new_rows: Sequence[Message]) -> UUID | None:
    """The active line's end once ``new_rows`` follow ``line``."""
    last = [*line, *new_rows][-1:]
    return last[0].id if last else None

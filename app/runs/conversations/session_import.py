"""A JSON export brought back as a new session of the caller's, or refused whole.

Everything is checked before anything is written (422 ``import_invalid`` naming the field): unique
message ids, each parent an earlier message, the active message one of them, parts that fit the role,
tool messages that answer a call made above them, structured outputs that validate. Images must be
the caller's own uploads on this deployment (``uploadId`` with the same ``sha256``; 422
``import_attachment_unavailable`` otherwise): each is copied into the new session, so the new one
and the old one never share an object. The messages keep their ids, order, tree and times; the
session gets a new id and its title marked as a copy (``… (copy)``), neither pinned nor archived: an
import is something to look at beside the original, not the original.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from iris.app.errors import Forbidden, Unprocessable
from iris.app.media.uploads import upload_path
from iris.app.mime import EXTENSION_BY_MIME
from iris.app.persistence.models import Agent, ChatSession, Message, Upload
from iris.app.persistence.repositories import (
    MessageRepository,
    SessionRepository,
    UploadRepository,
    parse_uuid,
    utcnow,
)
from iris.app.runs.content.outputs import ToolAgentOutput, WorkerAgentOutput
from iris.app.runs.content.parts import image_part
from iris.app.schemas.session_export import ExportImagePart, ExportMessage, ExportReasoningPart, SessionExport
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.storage.base import ObjectNotFound, Storage
from iris.app.threads import is_client_id

MAX_ID_LENGTH = 128
MAX_TITLE_LENGTH = 200


@dataclass(frozen=True, slots=True)
class _Checked:
    """The export's messages with their parents' indexes, and which are on the active line."""

    parents: list[int | None]
    on_line: set[int]


async def import_session(
    export: SessionExport,
    *,
    agent: Agent,
    principal: Principal,
    db: AsyncSession,
    storage: Storage,
    settings: Settings,
) -> ChatSession:
    """Check ``export``, copy its images, write the new session and commit; on any failure after
    copying, the copies are deleted again."""
    if principal.is_guest and not agent.guest_access:
        raise Forbidden("Guests may not use this agent; sign in.", code="agent_not_for_guests")
    checked = _check(export, settings)
    thread_id = str(uuid4())
    uploads = UploadRepository(session=db)
    originals = await _originals(export.messages, uploads, principal.user_id)
    copies: dict[str, Upload] = {}
    try:
        for upload_id, original in originals.items():
            copies[upload_id] = await _copy(original, thread_id, storage, principal.user_id)
            db.add(copies[upload_id])
        rows = [_row(message, copies) for message in export.messages]
        for index, row in enumerate(rows):
            parent = checked.parents[index]
            row.id = uuid7()
            row.parent_id = rows[parent].id if parent is not None else None
            if index not in checked.on_line:
                row.superseded_at = export.messages[index].superseded_at or utcnow()
        leaf = next((rows[i].id for i in sorted(checked.on_line, reverse=True)), None)
        session = SessionRepository(session=db).create_for_owner(
            thread_id,
            principal.user_id,
            agent.id,
            None,
            title=_copy_title(export.session.title),
            active_leaf_id=leaf,
        )
        MessageRepository(session=db).add_at(session.id, rows, 0)
        await db.commit()
    except BaseException:
        await db.rollback()
        for copy in copies.values():
            await storage.delete(copy.path)
        raise
    return session


def _invalid(detail: str, field: str) -> Unprocessable:
    return Unprocessable(detail, code="import_invalid", field=field)


def _check(export: SessionExport, settings: Settings) -> _Checked:
    if export.session.title is not None and len(export.session.title) > MAX_TITLE_LENGTH:
        raise _invalid(f"A title has at most {MAX_TITLE_LENGTH} characters.", "session.title")
    index_of: dict[str, int] = {}
    parents: list[int | None] = []
    calls_above: list[set[str]] = []  # tool call ids made on each message's line, itself included
    for index, message in enumerate(export.messages):
        where = f"messages[{index}]"
        if not is_client_id(message.id):
            raise _invalid(f"Message ids are 1 to {MAX_ID_LENGTH} printable ASCII characters.", f"{where}.id")
        if message.id in index_of:
            raise _invalid(f"The id {message.id!r} is used twice.", f"{where}.id")
        parent = None
        if message.parent_id is not None:
            parent = index_of.get(message.parent_id)
            if parent is None:
                raise _invalid("A message must follow one listed before it.", f"{where}.parentId")
        _check_content(message, where, settings)
        calls = calls_above[parent] if parent is not None else set()
        if message.role == "tool":
            answered = _answered_call(message, where)
            if answered not in calls:
                raise _invalid("A tool message must answer a call made before it on its line.", where)
        calls = calls | {call.id for call in message.tool_calls or ()}
        index_of[message.id] = index
        parents.append(parent)
        calls_above.append(calls)
    on_line: set[int] = set()
    if export.active_message_id is not None:
        current = index_of.get(export.active_message_id)
        if current is None:
            raise _invalid("The active message is not one of the messages.", "activeMessageId")
        while current is not None:
            on_line.add(current)
            current = parents[current]
    elif export.messages:
        raise _invalid("Say which message the active line ends at.", "activeMessageId")
    return _Checked(parents=parents, on_line=on_line)


def _check_content(message: ExportMessage, where: str, settings: Settings) -> None:
    kinds = {type(part) for part in message.parts}
    if message.role == "user":
        if (
            ExportReasoningPart in kinds
            or message.tool_calls
            or message.tool_answer
            or message.tool_agent_output
        ):
            raise _invalid("A user message holds text and images only.", where)
        images = sum(isinstance(part, ExportImagePart) for part in message.parts)
        if images > settings.max_images_per_message:
            raise _invalid(f"A message may carry at most {settings.max_images_per_message} images.", where)
        if not message.parts and not message.content.strip():
            raise _invalid("A user message needs text or an image.", where)
    elif message.role == "assistant":
        if kinds - {ExportReasoningPart} or message.tool_answer or message.tool_agent_output:
            raise _invalid("An assistant message holds its answer, reasoning and tool calls only.", where)
        _validated(message.worker_agent_output, WorkerAgentOutput, f"{where}.workerAgentOutput")
    elif message.parts or message.tool_calls or message.worker_agent_output:
        raise _invalid("A tool message holds its result only.", where)


def _answered_call(message: ExportMessage, where: str) -> str:
    if (message.tool_agent_output is None) == (message.tool_answer is None):
        raise _invalid("A tool message carries either toolAgentOutput or toolAnswer.", where)
    if message.tool_answer is not None:
        return message.tool_answer.tool_call_id
    output: ToolAgentOutput = _validated(
        message.tool_agent_output, ToolAgentOutput, f"{where}.toolAgentOutput"
    )
    return output.tool_call_id


def _validated(value: dict[str, Any] | None, kind: type[Any], field: str) -> Any:
    if value is None:
        return None
    try:
        return msgspec.convert(value, type=kind)
    except msgspec.ValidationError as exc:
        raise _invalid(f"{kind.__name__} does not validate: {exc}", field) from None


async def _originals(
    messages: Sequence[ExportMessage], uploads: UploadRepository, owner_id: str
) -> dict[str, Upload]:
    """The caller's uploads the export's images are, by upload id."""
    found: dict[str, Upload] = {}
    for index, message in enumerate(messages):
        for number, part in enumerate(message.parts):
            if not isinstance(part, ExportImagePart) or part.upload_id in found:
                continue
            pk = parse_uuid(part.upload_id)
            upload = None if pk is None else await uploads.get_owned(pk, owner_id)
            if upload is None or upload.sha256 != part.sha256 or upload.mime_type != part.mime_type:
                raise Unprocessable(
                    "This image is not one of your uploads here, so it cannot be imported.",
                    code="import_attachment_unavailable",
                    field=f"messages[{index}].parts[{number}]",
                )
            found[part.upload_id] = upload
    return found


async def _copy(original: Upload, thread_id: str, storage: Storage, owner_id: str) -> Upload:
    """The upload's bytes stored again for the new thread, and its record (not yet added)."""
    path = upload_path(owner_id, thread_id, EXTENSION_BY_MIME[original.mime_type])
    try:
        data = await storage.read(original.path)
    except ObjectNotFound:
        raise Unprocessable(
            f"The image {original.name!r} is gone from storage, so it cannot be imported.",
            code="import_attachment_unavailable",
        ) from None

    async def chunks() -> AsyncIterator[bytes]:
        yield data

    await storage.put(path, chunks(), content_type=original.mime_type)
    return Upload(
        id=uuid7(),
        owner_id=owner_id,
        thread_id=thread_id,
        bucket=storage.bucket,
        path=path,
        mime_type=original.mime_type,
        name=original.name,
        size=original.size,
        width=original.width,
        height=original.height,
        sha256=original.sha256,
    )


def _row(message: ExportMessage, copies: dict[str, Upload]) -> Message:
    """The stored row of one exported message (canonical parts, structured outputs as stored)."""
    meta: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ExportImagePart):
            parts.append({**image_part(copies[part.upload_id]), "name": part.name})
        elif isinstance(part, ExportReasoningPart):
            parts.append({"type": "reasoning", "text": part.text})
        else:
            parts.append({"type": "text", "text": part.text})
    parts += [
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        for call in message.tool_calls or ()
    ]
    for key, value, kind in (
        ("worker_agent_output", message.worker_agent_output, WorkerAgentOutput),
        ("tool_agent_output", message.tool_agent_output, ToolAgentOutput),
    ):
        if value is not None:  # checked already; stored as the event store stores it
            meta[key] = msgspec.to_builtins(msgspec.convert(value, type=kind))
    if message.tool_answer is not None:
        meta["frontend_tool_result"] = msgspec.to_builtins(message.tool_answer)
    return Message(
        role=message.role,
        content=message.content,
        parts=parts or None,
        meta=meta,
        external_id=message.id,
        created_at=message.created_at,
        updated_at=utcnow(),
    )


def _copy_title(title: str | None) -> str:
    """An imported session's title says it is a copy (titles are at most 200 characters)."""
    suffix = " (copy)"
    return (title or "Imported chat")[: 200 - len(suffix)] + suffix

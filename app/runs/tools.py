"""Server tools: executed by Iris during a run, their results fed back to the model.

Each tool declares its JSON Schema, checks its own arguments, and says in one line what its result
is (``resultSummary``, the content of the tool message). Tools see only what the run hands them —
the thread's attachments as canonical parts, and narrow actions on them — never the database or
storage directly. A tool with a side effect the user should agree to is marked ``needs_approval``:
the run then stops with an interrupt instead of calling it (see ``app.runs.interrupts``).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from providers import ToolSpec


class ToolFailed(Exception):
    """The tool could not answer; the message is shown to the model and stored in ``error``."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may use: the thread's images (canonical stored parts, oldest first), the clock, and
    ``delete_upload`` (removes one of this thread's uploads: its object and its record)."""

    images: Sequence[Mapping[str, Any]]
    now: Callable[[], dt.datetime]
    delete_upload: Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    result: Any
    summary: str


@dataclass(frozen=True, slots=True)
class ServerTool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[Any, ToolContext], Awaitable[ToolAnswer]]
    arguments: type[msgspec.Struct]
    needs_approval: bool = False

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def call(self, arguments_json: str, context: ToolContext) -> ToolAnswer:
        """Decode the model's JSON arguments strictly, then run; bad arguments are a ``ToolFailed``."""
        try:
            args = msgspec.json.decode(arguments_json or "{}", type=self.arguments)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ToolFailed(f"invalid arguments: {exc}") from exc
        return await self.run(args, context)


class ImageInfoArgs(msgspec.Struct, forbid_unknown_fields=True):
    index: int | None = None


async def image_info(args: ImageInfoArgs, context: ToolContext) -> ToolAnswer:
    """Format and size of one attachment of this thread (1-based ``index``; default the latest)."""
    images = context.images
    if not images:
        raise ToolFailed("this thread has no images")
    index = len(images) if args.index is None else args.index
    if not 1 <= index <= len(images):
        raise ToolFailed(f"index must be between 1 and {len(images)}")
    image = images[index - 1]
    result = {
        "index": index,
        "name": image.get("name", ""),
        "mimeType": image["mimeType"],
        "width": image["width"],
        "height": image["height"],
        "size": image["size"],
    }
    label = result["name"] or f"image {index}"
    summary = (
        f"{label}: {image['mimeType']}, {image['width']}x{image['height']} pixels, {image['size']} bytes"
    )
    return ToolAnswer(result=result, summary=summary)


class CurrentTimeArgs(msgspec.Struct, forbid_unknown_fields=True):
    timezone: str = "UTC"


async def current_time(args: CurrentTimeArgs, context: ToolContext) -> ToolAnswer:
    """The current date and time in an IANA time zone."""
    try:
        zone = zoneinfo.ZoneInfo(args.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ToolFailed(f"unknown time zone {args.timezone!r}") from exc
    now = context.now().astimezone(zone)
    iso = now.isoformat(timespec="seconds")
    return ToolAnswer(result={"iso": iso, "timezone": args.timezone}, summary=f"{iso} ({args.timezone})")


class DeleteAttachmentArgs(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    upload_id: str


async def delete_attachment(args: DeleteAttachmentArgs, context: ToolContext) -> ToolAnswer:
    """Delete one image of this thread for good (only ever run after the user approved it)."""
    image = next((i for i in context.images if i.get("uploadId") == args.upload_id), None)
    if image is None:
        raise ToolFailed(f"no image {args.upload_id!r} in this conversation")
    await context.delete_upload(args.upload_id)
    name = image.get("name") or args.upload_id
    return ToolAnswer(result={"deleted": args.upload_id, "name": name}, summary=f"deleted {name}")


SERVER_TOOLS: dict[str, ServerTool] = {
    tool.name: tool
    for tool in (
        ServerTool(
            name="image_info",
            description="Format, pixel size and byte size of an image attached to this conversation.",
            parameters={
                "type": "object",
                "properties": {
                    "index": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Which image, counting from 1; default the latest.",
                    }
                },
                "additionalProperties": False,
            },
            run=image_info,
            arguments=ImageInfoArgs,
        ),
        ServerTool(
            name="current_time",
            description="The current date and time, in an IANA time zone (default UTC).",
            parameters={
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "e.g. Europe/Paris"}},
                "additionalProperties": False,
            },
            run=current_time,
            arguments=CurrentTimeArgs,
        ),
        ServerTool(
            name="delete_attachment",
            description="Delete an image attached to this conversation (asks the user to approve first).",
            parameters={
                "type": "object",
                "properties": {"uploadId": {"type": "string", "description": "the image's upload id"}},
                "required": ["uploadId"],
                "additionalProperties": False,
            },
            run=delete_attachment,
            arguments=DeleteAttachmentArgs,
            needs_approval=True,
        ),
    )
}

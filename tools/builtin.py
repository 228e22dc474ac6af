"""The built-in tools: ``image_info``, ``current_time`` and ``delete_attachment``.

They register through the ``iris.tools`` entry-point group exactly as a third party's tools do, and
see only what the :class:`~iris.tools.spec.ToolContext` hands them: the thread's attachments as canonical
parts, the clock, and one narrow action on the thread's uploads.
"""

from __future__ import annotations

import zoneinfo

import msgspec

from iris.tools.content import ToolResult
from iris.tools.spec import StructTool, ToolContext, ToolDefinition, ToolFailed, ToolHints, ToolPluginContext

READ_ONLY = ToolHints(read_only=True, destructive=False, idempotent=True, open_world=False)


class ImageInfoArgs(msgspec.Struct, forbid_unknown_fields=True):
    index: int | None = None


async def _image_info(args: ImageInfoArgs, context: ToolContext) -> ToolResult:
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
    return ToolResult(summary=summary, structured=result)


class CurrentTimeArgs(msgspec.Struct, forbid_unknown_fields=True):
    timezone: str = "UTC"


async def _current_time(args: CurrentTimeArgs, context: ToolContext) -> ToolResult:
    """The current date and time in an IANA time zone."""
    try:
        zone = zoneinfo.ZoneInfo(args.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ToolFailed(f"unknown time zone {args.timezone!r}") from exc
    iso = context.now().astimezone(zone).isoformat(timespec="seconds")
    return ToolResult(summary=f"{iso} ({args.timezone})", structured={"iso": iso, "timezone": args.timezone})


class DeleteAttachmentArgs(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    upload_id: str


async def _delete_attachment(args: DeleteAttachmentArgs, context: ToolContext) -> ToolResult:
    """Delete one image of this thread for good (only ever run after the user approved it)."""
    image = next((i for i in context.images if i.get("uploadId") == args.upload_id), None)
    if image is None:
        raise ToolFailed(f"no image {args.upload_id!r} in this conversation")
    await context.delete_upload(args.upload_id)
    name = image.get("name") or args.upload_id
    return ToolResult(summary=f"deleted {name}", structured={"deleted": args.upload_id, "name": name})


def image_info(context: ToolPluginContext) -> StructTool[ImageInfoArgs]:
    """Entry point (``iris.tools``)."""
    return StructTool(
        ToolDefinition(
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
            hints=READ_ONLY,
            timeout_seconds=10,
        ),
        ImageInfoArgs,
        _image_info,
    )


def current_time(context: ToolPluginContext) -> StructTool[CurrentTimeArgs]:
    """Entry point (``iris.tools``)."""
    return StructTool(
        ToolDefinition(
            name="current_time",
            description="The current date and time, in an IANA time zone (default UTC).",
            parameters={
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "e.g. Europe/Paris"}},
                "additionalProperties": False,
            },
            hints=READ_ONLY,
            timeout_seconds=10,
        ),
        CurrentTimeArgs,
        _current_time,
    )


def delete_attachment(context: ToolPluginContext) -> StructTool[DeleteAttachmentArgs]:
    """Entry point (``iris.tools``)."""
    return StructTool(
        ToolDefinition(
            name="delete_attachment",
            description="Delete an image attached to this conversation (asks the user to approve first).",
            parameters={
                "type": "object",
                "properties": {"uploadId": {"type": "string", "description": "the image's upload id"}},
                "required": ["uploadId"],
                "additionalProperties": False,
            },
            approval="always",
            hints=ToolHints(read_only=False, destructive=True, idempotent=True, open_world=False),
            timeout_seconds=30,
        ),
        DeleteAttachmentArgs,
        _delete_attachment,
    )

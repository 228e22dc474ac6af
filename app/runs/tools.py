"""Server tools: executed by Iris during a run, their results fed back to the model.

Each tool declares its JSON Schema, checks its own arguments, and says in one line what its result
is (``resultSummary``, the content of the tool message). Tools see only what the run hands them —
the thread's attachments as canonical parts — never the database or storage.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from providers import ToolSpec


class ToolFailed(Exception):
    """The tool could not answer; the message is shown to the model and stored in ``error``."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may look at: the thread's images (canonical stored parts, oldest first)."""

    images: Sequence[Mapping[str, Any]]
    now: Callable[[], dt.datetime]


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    result: Any
    summary: str


@dataclass(frozen=True, slots=True)
class ServerTool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[Any, ToolContext], ToolAnswer]
    arguments: type[msgspec.Struct]

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def call(self, arguments_json: str, context: ToolContext) -> ToolAnswer:
        """Decode the model's JSON arguments strictly, then run; bad arguments are a ``ToolFailed``."""
        try:
            args = msgspec.json.decode(arguments_json or "{}", type=self.arguments)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ToolFailed(f"invalid arguments: {exc}") from exc
        return self.run(args, context)


class ImageInfoArgs(msgspec.Struct, forbid_unknown_fields=True):
    index: int | None = None


def image_info(args: ImageInfoArgs, context: ToolContext) -> ToolAnswer:
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


def current_time(args: CurrentTimeArgs, context: ToolContext) -> ToolAnswer:
    """The current date and time in an IANA time zone."""
    try:
        zone = zoneinfo.ZoneInfo(args.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ToolFailed(f"unknown time zone {args.timezone!r}") from exc
    now = context.now().astimezone(zone)
    iso = now.isoformat(timespec="seconds")
    return ToolAnswer(result={"iso": iso, "timezone": args.timezone}, summary=f"{iso} ({args.timezone})")


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
    )
}

"""A real MCP server for the tests, built with the official SDK: the example chart server
(``examples/mcp-chart-server``) plus tools that misbehave on purpose.

Run as ``python tests/support/mcp_server.py`` (stdio) or ``... --http --port N`` (Streamable HTTP on
127.0.0.1; with ``REQUIRE_TOKEN`` set, every request must carry ``Authorization: Bearer <it>``).
``MARK_DIR`` is where it leaves files the tests wait on: ``pid`` at start, ``{marker}.started`` and
``{marker}.cancelled`` around a slow call, ``asked.{action}`` when ``ask_contact``'s question is
answered, ``visited.{action}`` when ``visit_page``'s page is done with. ``book`` asks a richer form;
``chart_request`` is a prompt. ``trace_context`` answers with the W3C trace context its call arrived
with. ``grow`` adds a tool (and, asked to, says so to ``subscriptions/listen``); with ``TOOLS_TTL_MS``
set, ``tools/list`` says its list may be trusted that long. ``labelled`` has a title and an icon.
``linked`` returns resource links to the ``memo://notes/…`` resources (``read.declared`` when the one
declared huge is read).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import sys
import wave
from pathlib import Path
from typing import Annotated, Any, Literal

import mcp_types as mt
from mcp.server.caching import CacheHint
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "mcp-chart-server"))
from chart_server import READ_ONLY, draw_chart, mcp

MARKS = Path(os.environ.get("MARK_DIR", "."))
VISIT_URL = "https://example.com/confirm-report"


def _mark(name: str) -> None:
    (MARKS / name).write_text(str(os.getpid()))


@mcp.tool(annotations=READ_ONLY)
async def slow(seconds: float, marker: str = "slow") -> str:
    """Sleep, then answer (a long call; it notes when it starts and whether it was cancelled)."""
    _mark(f"{marker}.started")
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        _mark(f"{marker}.cancelled")
        raise
    return f"slept {seconds} s"


@mcp.tool(annotations=READ_ONLY)
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@mcp.tool(annotations=READ_ONLY)
def broken() -> str:
    """Fail with a tool error (isError)."""
    raise ToolError("broken on purpose")


@mcp.tool()
def wipe(target: str) -> str:
    """Pretend to delete something (no annotations: a destructive tool as far as anyone knows)."""
    _mark(f"wiped-{target}")
    return f"wiped {target}"


@mcp.tool(annotations=READ_ONLY)
def trace_context(ctx: Context) -> str:
    """The ``traceparent`` and ``tracestate`` the call carried in ``params._meta`` and (over HTTP) as
    request headers, as JSON (``null`` where absent)."""
    meta: dict[str, Any] = dict(ctx.request_context.meta or {})
    headers = ctx.headers or {}
    return json.dumps(
        {
            "meta": {name: meta.get(name) for name in ("traceparent", "tracestate")},
            "headers": {name: headers.get(name) for name in ("traceparent", "tracestate")},
        }
    )


class Contact(BaseModel):
    """The form ``ask_contact`` asks the user to fill in."""

    name: str
    subscribe: bool = False


def _contact_question() -> Elicit[Contact]:
    return Elicit("Who should the report go to?", Contact)


@mcp.tool(annotations=READ_ONLY)
def ask_contact(contact: Annotated[ElicitationResult[Contact], Resolve(_contact_question)]) -> str:
    """Ask the user for a contact mid-call (elicitation: ``elicitation/create`` on 2025-11-25, an
    ``input_required`` result on 2026-07-28) and answer with what they said."""
    _mark(f"asked.{contact.action}")
    if isinstance(contact, AcceptedElicitation):
        return f"sending to {contact.data.name} (subscribe: {contact.data.subscribe})"
    return f"the user chose {contact.action}"


class Booking(BaseModel):
    """The form ``book`` asks for: a number within bounds, a choice, an e-mail address."""

    guests: Annotated[int, Field(ge=1, le=8, description="How many people")] = 2
    room: Literal["garden", "tower"]
    email: Annotated[str, Field(json_schema_extra={"format": "email"})]


def _booking_question() -> Elicit[Booking]:
    return Elicit("Which room, for how many?", Booking)


@mcp.tool(annotations=READ_ONLY)
def book(booking: Annotated[ElicitationResult[Booking], Resolve(_booking_question)]) -> str:
    """Ask the user for a booking mid-call (a form with an integer, a choice and an e-mail)."""
    if isinstance(booking, AcceptedElicitation):
        data = booking.data
        return f"booked the {data.room} room for {data.guests} ({data.email})"
    return f"the user chose {booking.action}"


@mcp.tool(annotations=READ_ONLY)
def visit_page(ctx: Context) -> str | mt.InputRequiredResult:
    """Send the user to a page (URL-mode elicitation, as an ``input_required`` result), then say
    what they did."""
    answer = (ctx.input_responses or {}).get("page")
    if answer is None:
        page = mt.ElicitRequestURLParams(message="Confirm the report on its page.", url=VISIT_URL)
        return mt.InputRequiredResult(input_requests={"page": mt.ElicitRequest(params=page)})
    action = answer.action if isinstance(answer, mt.ElicitResult) else "unknown"
    _mark(f"visited.{action}")
    return f"the page visit ended: {action}"


@mcp.prompt(title="Chart request")
def chart_request(topic: str) -> str:
    """Ask for a chart about a topic."""
    return f"Please draw a chart of {topic}."


ICON = mt.Icon(src="data:image/svg+xml;base64,PHN2Zy8+", mime_type="image/svg+xml", sizes=["any"])


@mcp.tool(annotations=READ_ONLY, title="A labelled tool", icons=[ICON])
def labelled() -> str:
    """A tool with a display name and an icon."""
    return "labelled"


@mcp.tool(annotations=READ_ONLY)
async def grow(name: str, ctx: Context, announce: bool = True) -> str:
    """Add a tool called ``name`` (it answers its own name); ``announce`` publishes tools/list_changed."""
    mcp.add_tool(lambda: name, name=name, description=f"grown: {name}", annotations=READ_ONLY)
    if announce:
        await ctx.notify_tools_changed()
    return f"grew {name}"


def _wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(8000)
        clip.writeframes(b"\x00\x00" * 800)
    return out.getvalue()


@mcp.tool(annotations=READ_ONLY)
def everything() -> mt.CallToolResult:
    """Every kind of content block, and structured content."""
    png = base64.b64encode(draw_chart([3, 1, 2])).decode()
    return mt.CallToolResult(
        content=[
            mt.TextContent(text="Here is everything."),
            mt.ImageContent(data=png, mime_type="image/png"),
            mt.AudioContent(data=base64.b64encode(_wav()).decode(), mime_type="audio/wav"),
            mt.ResourceLink(uri="https://example.com/report.pdf", name="report", mime_type="application/pdf"),
            mt.EmbeddedResource(
                resource=mt.TextResourceContents(uri="memo://note", mime_type="text/plain", text="a note")
            ),
        ],
        structured_content={"answer": 42},
    )


@mcp.resource("memo://notes/greeting", mime_type="text/plain")
def greeting_note() -> str:
    """A short text resource (``linked`` links to it)."""
    return "hello from a note"


@mcp.resource("memo://notes/chart", mime_type="image/png")
def chart_note() -> bytes:
    """A binary resource: a small chart."""
    return draw_chart([1, 2, 3])


@mcp.resource("memo://notes/big", mime_type="application/octet-stream")
def big_note() -> bytes:
    """A binary resource of ``BIG_NOTE_BYTES`` (200 000 by default)."""
    return bytes(int(os.environ.get("BIG_NOTE_BYTES", "200000")))


@mcp.resource("memo://notes/declared", mime_type="application/octet-stream")
def declared_note() -> bytes:
    """A resource its link says is huge; it notes being read (it should not be)."""
    _mark("read.declared")
    return b"small after all"


@mcp.tool(annotations=READ_ONLY)
def linked() -> mt.CallToolResult:
    """Resource links: a text note, a chart, a big blob, one declared huge, one to the web, one that is
    not there."""
    links = [
        ("memo://notes/greeting", "greeting", "text/plain", None),
        ("memo://notes/chart", "chart", "image/png", None),
        ("memo://notes/big", "big", "application/octet-stream", None),
        ("memo://notes/declared", "declared", "application/octet-stream", 10**9),
        ("https://example.com/report.pdf", "report", "application/pdf", None),
        ("memo://notes/missing", "missing", "text/plain", None),
    ]
    return mt.CallToolResult(
        content=[
            mt.TextContent(text="Here are some notes."),
            *(mt.ResourceLink(uri=u, name=n, mime_type=m, size=z) for u, n, m, z in links),
        ]
    )


@mcp.tool(annotations=READ_ONLY, structured_output=False)
def many_images(count: int) -> list[Image]:
    """``count`` small images (for the result-size limits)."""
    return [Image(data=draw_chart([i + 1]), format="png") for i in range(count)]


@mcp.tool(annotations=READ_ONLY)
async def count(steps: int, ctx: Context, pause: float = 0.3) -> str:
    """Count to ``steps``: at each step a log line, then progress with a message, then a pause."""
    for step in range(1, steps + 1):
        await ctx.log("info", f"step {step} done", logger_name="counter")
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
        await asyncio.sleep(pause)
    return f"counted to {steps}"


def _http_app(token: str | None) -> Any:
    app = mcp.streamable_http_app()
    if not token:
        return app

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    _mark("pid")
    if ttl := os.environ.get("TOOLS_TTL_MS"):
        mcp._lowlevel_server.cache_hints["tools/list"] = CacheHint(ttl_ms=int(ttl))
    if not args.http:
        mcp.run()
        return
    import uvicorn

    uvicorn.run(
        _http_app(os.environ.get("REQUIRE_TOKEN")), host="127.0.0.1", port=args.port, log_level="warning"
    )


if __name__ == "__main__":
    main()

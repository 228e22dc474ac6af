"""A small MCP server for Iris's "Give your agent tools" walk-through, built with the official SDK.

Two tools: ``chart`` draws a bar chart of some numbers (a PNG the model then sees: an image-returning
tool) and ``stats`` sums them up (read-only, with structured output). Run it over stdio (what Iris
starts for a ``transport = "stdio"`` server) or over Streamable HTTP::

    python chart_server.py                       # stdio
    python chart_server.py --http --port 8765    # http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

import argparse
import io
import statistics

from mcp.server import MCPServer
from mcp.server.mcpserver import Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from PIL import Image as PILImage
from PIL import ImageDraw

mcp = MCPServer("iris-chart")

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
BAR_COLOURS = [(30, 60, 220), (220, 30, 30), (30, 160, 60), (245, 140, 30), (130, 50, 170)]


def draw_chart(values: list[float], title: str = "") -> bytes:
    """A bar chart as PNG bytes: one bar per value, scaled to the largest."""
    width, height, margin = 480, 320, 24
    image = PILImage.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    top = max([abs(v) for v in values] or [1]) or 1
    slot = (width - 2 * margin) / max(len(values), 1)
    for index, value in enumerate(values):
        bar = (height - 3 * margin) * abs(value) / top
        left = margin + index * slot + slot * 0.1
        draw.rectangle(
            (left, height - margin - bar, left + slot * 0.8, height - margin),
            fill=BAR_COLOURS[index % len(BAR_COLOURS)],
        )
    draw.line((margin, height - margin, width - margin, height - margin), fill="black", width=2)
    if title:
        draw.text((margin, margin / 2), title, fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


@mcp.tool(annotations=READ_ONLY, structured_output=False)
def chart(values: list[float], title: str = "") -> list[str | Image]:
    """Draw a bar chart of the numbers (one bar each) and return it as a PNG image."""
    if not values:
        raise ToolError("give at least one number")
    if len(values) > 50:
        raise ToolError("at most 50 numbers")
    caption = f"A bar chart of {len(values)} values{f' ({title})' if title else ''}."
    return [caption, Image(data=draw_chart(values, title), format="png")]


@mcp.tool(annotations=READ_ONLY)
def stats(values: list[float]) -> dict[str, float]:
    """Count, sum, mean, minimum and maximum of the numbers."""
    if not values:
        raise ToolError("give at least one number")
    return {
        "count": len(values),
        "sum": sum(values),
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    if args.http:
        mcp.run("streamable-http", host=args.host, port=args.port)
    else:
        mcp.run()


if __name__ == "__main__":
    main()

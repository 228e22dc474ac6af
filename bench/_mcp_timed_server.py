"""The MCP server bench/mcp_tools.py calls: the example chart server's drawing, in tools that time
themselves (``own_ms=…`` first in their text), so the bench can subtract the tool's own time from the
round trip. ``python bench/_mcp_timed_server.py`` (stdio) or ``... --http --port N``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "mcp-chart-server"))
from chart_server import READ_ONLY, draw_chart

mcp = MCPServer("iris-bench")


@mcp.tool(annotations=READ_ONLY, structured_output=False)
def noop() -> str:
    """Nothing: the round trip is all transport."""
    start = time.perf_counter()
    return f"own_ms={(time.perf_counter() - start) * 1000:.4f}"


@mcp.tool(annotations=READ_ONLY, structured_output=False)
def chart(values: list[float]) -> list[str | Image]:
    """The example's bar chart (a ~3 kB PNG), timed."""
    start = time.perf_counter()
    png = draw_chart(values)
    return [f"own_ms={(time.perf_counter() - start) * 1000:.4f}", Image(data=png, format="png")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    if args.http:
        mcp.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        mcp.run()


if __name__ == "__main__":
    main()

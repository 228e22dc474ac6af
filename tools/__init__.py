"""Tool SPI: what a tool plugin implements and what it is given. Imports nothing from ``app``.

Third parties implement :class:`Tool` and expose a factory through the ``iris.tools`` entry-point
group (the built-in tools register the same way); everything they need is re-exported here.
"""

if __name__ != "iris.tools":  # the folder on sys.path: a second copy of every module (ADR 0072)
    raise ImportError("import Iris as iris.tools, not as tools")


from iris.tools.content import (
    AudioContent,
    ContentPart,
    ImageContent,
    JsonContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
    ToolResult,
)
from iris.tools.spec import (
    TOOL_NAME_PATTERN,
    TOOL_SPEC_VERSION,
    Approval,
    LogHook,
    ProgressHook,
    StructTool,
    Tool,
    ToolContext,
    ToolDefinition,
    ToolFactory,
    ToolFailed,
    ToolHints,
    ToolPluginContext,
    needs_approval,
)

__all__ = [
    "TOOL_NAME_PATTERN",
    "TOOL_SPEC_VERSION",
    "Approval",
    "AudioContent",
    "ContentPart",
    "ImageContent",
    "JsonContent",
    "LogHook",
    "ProgressHook",
    "ResourceContent",
    "ResourceLinkContent",
    "StructTool",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolFactory",
    "ToolFailed",
    "ToolHints",
    "ToolPluginContext",
    "ToolResult",
    "needs_approval",
]

"""Test helpers that ship with the tool SPI, so a tool plugin can test itself the way Iris tests its
built-ins. Needs pytest (a plugin's test dependency); nothing here imports ``app``.

In a plugin's tests::

    from iris.tools.testing import ToolConformance

    class TestConformance(ToolConformance):
        factory = staticmethod(create)           # the entry point's factory
        example_arguments = {"numbers": [1, 2]}  # a call that should succeed
"""

from iris.tools.testing.conformance import (
    Reports,
    ToolConformance,
    call_tool,
    check_definition,
    check_tool,
    tool_context,
)

__all__ = ["Reports", "ToolConformance", "call_tool", "check_definition", "check_tool", "tool_context"]

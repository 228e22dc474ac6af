"""Agent runs: intake before the stream, the orchestrator, tools, the event store, live fan-out, history.

Imports every layer below ``api`` (``catalogue``, ``media``, ``security``, ``schemas``, ``agui``, …).
"""

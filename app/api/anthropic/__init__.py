"""Anthropic's Messages API (``/v1/messages`` and ``count_tokens``), on the stateless core.

- :mod:`~iris.app.api.anthropic.wire`: Anthropic's request and response shapes (snake_case, as sent).
- :mod:`~iris.app.api.anthropic.convert`: a request → the unsaved history, tools, knobs and reasoning.
- :mod:`~iris.app.api.anthropic.answer`: the run's AG-UI events → Anthropic's stream events or a message.
- :mod:`~iris.app.api.anthropic.errors`: every error as ``{"type": "error", "error": {...}}``.
- :mod:`~iris.app.api.anthropic.models`: ``GET /v1/models`` in Anthropic's list shape.
- :mod:`~iris.app.api.anthropic.routes`: the routes.
"""

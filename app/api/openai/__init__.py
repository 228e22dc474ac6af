"""The OpenAI-compatible gateway (``/v1``): Chat Completions and the model list, on the stateless core.

- :mod:`~iris.app.api.openai.wire`: OpenAI's request and response shapes (snake_case, as OpenAI sends them).
- :mod:`~iris.app.api.openai.convert`: a request → the unsaved history, tools and knobs of a stateless run.
- :mod:`~iris.app.api.openai.chunks`: the run's AG-UI events → ``chat.completion.chunk``s or a
  ``chat.completion``.
- :mod:`~iris.app.api.openai.errors`: every error as ``{"error": {message, type, param, code}}``.
- :mod:`~iris.app.api.openai.routes`: the routes.
"""

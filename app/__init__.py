"""Iris: a multimodal agent-chat backend (Litestar service).

Packages are layers; each imports only those below it (checked by ``lint-imports``, see pyproject):
``api`` → ``runs`` → ``catalogue`` | ``media`` → ``security`` → ``schemas`` → ``agui`` →
``persistence`` | ``storage`` → the root modules ``settings``, ``errors``, ``threads``, ``mime``.
``asgi`` and ``__main__`` compose them all; ``providers`` (the SPI) never imports ``app``.
"""

if __name__ != "iris.app":  # the folder on sys.path: a second copy of every module (ADR 0072)
    raise ImportError("import Iris as iris.app, not as app")

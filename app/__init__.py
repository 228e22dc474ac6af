"""Iris: a multimodal agent-chat backend (Litestar service).

Packages are layers; each imports only those below it (checked by ``lint-imports``, see pyproject):
``api`` → ``runs`` → ``catalogue`` | ``media`` → ``security`` → ``schemas`` → ``agui`` →
``persistence`` | ``storage`` → the root modules ``settings``, ``errors``, ``threads``, ``mime``.
``asgi`` and ``__main__`` compose them all; ``providers`` (the SPI) never imports ``app``.
"""

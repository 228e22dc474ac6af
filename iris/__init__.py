"""Iris's one import root, so that installing Iris adds a single top-level name to site-packages.

``iris.app`` is the service, ``iris.providers`` the provider SPI and its built-in vendors, ``iris.tools``
the tool SPI and the built-in tools. In the repository they are the folders ``app/``, ``providers/`` and
``tools/``; ``iris/`` links to them (ADR 0072 says why).
"""

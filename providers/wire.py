"""The one base for every struct that crosses the wire (HTTP JSON, SSE events, stored JSON).

It lives in ``providers`` because that is the lowest layer: ``app`` builds on it, and
``providers`` may not import ``app``.
"""

from __future__ import annotations

import msgspec


class WireStruct(msgspec.Struct, rename="camel", kw_only=True):
    """camelCase on the wire, keyword-only construction.

    No ``omit_defaults`` here: it drops *every* field equal to its default (a ``role`` of
    ``"assistant"`` too), so subclasses opt in only where every default is ``None``/``UNSET``.
    """


class RequestStruct(WireStruct, forbid_unknown_fields=True):
    """Bodies of Iris's own endpoints: a misspelt field is an error, not a silent no-op."""

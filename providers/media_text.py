"""Inline media as text for vendor request bodies: base64 and ``data:`` URLs, made once for the bytes a
conversation sends again, and written into a JSON body without being scanned again.

A conversation sends its images with every turn, and the core hands the same ``bytes`` object for an
image while its variant is in memory (``iris.app.media.variants``). Encoding it again (base64) and msgspec
checking each of its characters for escapes were a large share of a run's instructions (ADR 0065), and
its bound is ADR 0002's. :class:`MediaMemo` remembers the text by the bytes' identity, and the text is a
:class:`JsonText`, whose JSON string literal is computed once and copied as it is by
:func:`encode_body`. Both are ``str`` for everything else (equality, ``json.dumps``, SDKs).
"""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from typing import Any

import msgspec

_PLAIN = msgspec.json.Encoder()


class JsonText(str):
    """Text whose JSON form (a string literal) is computed once, the first time a body needs it."""

    def json(self) -> bytes:
        literal: bytes | None = self.__dict__.get("_json")
        if literal is None:  # two threads may both compute it: the same bytes either way
            literal = self.__dict__["_json"] = _PLAIN.encode(str(self))
        return literal


def _literal(value: object) -> msgspec.Raw:
    if isinstance(value, JsonText):
        return msgspec.Raw(value.json())
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")  # as msgspec says


_BODY = msgspec.json.Encoder(enc_hook=_literal)


def encode_body(body: dict[str, Any]) -> bytes:
    """``body`` as JSON bytes in one pass; a :class:`JsonText` goes in as its remembered literal."""
    return _BODY.encode(body)


class MediaMemo:
    """The texts made last from byte strings — base64, or a ``data:`` URL of a given type — by the bytes'
    identity, holding ``max_bytes`` at most: an entry costs its text, the text's JSON literal and the
    ``bytes`` it keeps alive (an entry holds them, so an ``id`` is never reused while it is a key).

    The bytes count because they are the larger part of what an entry pins once the variant cache
    (``iris.app.media.variants``) has let them go; bytes under :data:`MEMO_MIN_BYTES` are encoded every time.
    Thread-safe (a lock around the dict)."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._recent: OrderedDict[tuple[int, str], tuple[bytes, JsonText]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def base64(self, data: bytes) -> str:
        return self._text(data, "")

    def data_url(self, mime_type: str, data: bytes) -> str:
        return self._text(data, f"data:{mime_type};base64,")

    def _text(self, data: bytes, prefix: str) -> str:
        if len(data) < MEMO_MIN_BYTES:
            return prefix + base64.b64encode(data).decode("ascii")
        key = (id(data), prefix)
        with self._lock:
            hit = self._recent.get(key)
            if hit is not None and hit[0] is data:
                self._recent.move_to_end(key)
                return hit[1]
        text = JsonText(prefix + base64.b64encode(data).decode("ascii"))
        cost = _cost(data, text)
        if cost <= self._max_bytes:
            with self._lock:
                if (stale := self._recent.pop(key, None)) is not None:
                    self._held -= _cost(*stale)
                self._recent[key] = (data, text)
                self._held += cost
                while self._held > self._max_bytes:
                    _, evicted = self._recent.popitem(last=False)
                    self._held -= _cost(*evicted)
        return text


def _cost(data: bytes, text: str) -> int:
    """What a memo entry holds: the bytes, the (ASCII) text and its JSON literal."""
    return len(data) + 2 * len(text)


MEMO_MIN_BYTES = 16 * 1024
"""Smaller byte strings are encoded every time (cheap, and not worth an entry)."""
MEMO_BYTES = 16 * 1024 * 1024
"""What :data:`MEDIA` holds at most, bytes and texts together: the images of the turns in flight and of
the conversations that sent theirs last. A bound on all it holds, not on the texts alone: runs that each
send an image of their own (rarely sent again) kept the memo full of texts no turn would ask for, and
their bytes alive besides (docs/adr/0002-peak-memory.md)."""
MEDIA = MediaMemo(MEMO_BYTES)

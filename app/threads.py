"""Thread ids as clients send them, and the one safe way they appear in storage paths.

AG-UI's ``threadId`` is an opaque string, so Iris accepts 1 to 128 characters of ``[A-Za-z0-9._:-]`` and
echoes them byte for byte. Threads are scoped to their owner. In storage paths
(``agent-inputs/{userId}/{segment}/uploads/…``) an id made only of ``[a-z0-9_-]`` (every lower-case
UUID, so every path written before ids were opaque) is its own segment; any other id is written as
``b32.`` + its lower-case unpadded base32. A plain id never holds a dot, so the two forms never meet;
no segment is ``.`` or ``..``, holds a ``:``, or differs from another only by case (safe on
case-insensitive file systems and within Supabase Storage's key alphabet).
"""

from __future__ import annotations

import base64
import binascii
import re

from iris.app.errors import Unprocessable

MAX_THREAD_ID_LENGTH = 128
THREAD_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
"""What a ``threadId`` may be, as the OpenAPI document states it."""
_THREAD_ID = re.compile(THREAD_ID_PATTERN.strip("^$"))
CLIENT_ID_PATTERN = r"^[ -~]{1,128}$"
"""What a run's or a message's id may be (``runId``, ``messages[].id``, an imported message's ``id``):
1 to 128 printable ASCII characters, as the OpenAPI document states it."""
_CLIENT_ID = re.compile(CLIENT_ID_PATTERN.strip("^$"))
_PLAIN = re.compile(r"[a-z0-9_-]{1,128}")
_ENCODED_PREFIX = "b32."


def check_thread_id(value: object, *, field: str = "threadId") -> str:
    """The id unchanged, or 422 ``invalid_thread_id``."""
    if not isinstance(value, str) or not _THREAD_ID.fullmatch(value):
        raise Unprocessable(
            f"'{field}' must be 1 to {MAX_THREAD_ID_LENGTH} characters of A-Z, a-z, 0-9, '.', '_', ':', '-'.",
            code="invalid_thread_id",
            field=field,
        )
    return value


def is_client_id(value: str) -> bool:
    """Whether ``value`` is a run or message id as :data:`CLIENT_ID_PATTERN` states it."""
    return _CLIENT_ID.fullmatch(value) is not None


def is_thread_id(value: str) -> bool:
    """Whether ``value`` is an id :func:`check_thread_id` accepts."""
    return _THREAD_ID.fullmatch(value) is not None


def thread_segment(thread_id: str) -> str:
    """The path segment that stands for ``thread_id`` in storage (injective, lower-case, no dot segment)."""
    if _PLAIN.fullmatch(thread_id):
        return thread_id
    encoded = base64.b32encode(thread_id.encode("ascii")).decode("ascii").rstrip("=").lower()
    return _ENCODED_PREFIX + encoded


def thread_from_segment(segment: str) -> str | None:
    """The thread id a storage path segment stands for, or ``None`` when it stands for none."""
    if _PLAIN.fullmatch(segment):
        return segment
    if not segment.startswith(_ENCODED_PREFIX):
        return None
    body = segment[len(_ENCODED_PREFIX) :]
    if not body or body != body.lower():
        return None
    try:
        decoded = base64.b32decode(body.upper() + "=" * (-len(body) % 8)).decode("ascii")
    except (binascii.Error, ValueError):
        return None
    if not is_thread_id(decoded) or thread_segment(decoded) != segment:
        return None
    return decoded

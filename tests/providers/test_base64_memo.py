"""The built-in vendors' base64 of inline media: the same bytes object sent again is not encoded again
(a conversation re-sends its images every turn), and what comes back is always the bytes' own text."""

from __future__ import annotations

import base64
import os

from providers import ImagePart
from providers.http import MEMO_MIN_BYTES, Base64Memo, b64, data_url


def _image(data: bytes) -> ImagePart:
    return ImagePart(mime_type="image/png", width=1, height=1, data=data)


def test_the_same_bytes_object_is_encoded_once() -> None:
    data = os.urandom(MEMO_MIN_BYTES * 4)
    part = _image(data)

    first, second = b64(part), b64(_image(data))

    assert first == base64.b64encode(data).decode()
    assert second is first  # remembered, not encoded again
    assert data_url(part) == f"data:image/png;base64,{first}"


def test_equal_bytes_in_another_object_and_other_bytes_get_their_own_text() -> None:
    memo = Base64Memo(10 * MEMO_MIN_BYTES)
    data = os.urandom(MEMO_MIN_BYTES * 2)
    copy = bytes(bytearray(data))
    other = os.urandom(MEMO_MIN_BYTES * 2)

    texts = [memo.encode(data), memo.encode(copy), memo.encode(other)]

    assert texts[0] == texts[1] == base64.b64encode(data).decode()
    assert texts[1] is not texts[0]  # keyed by identity: an equal copy is encoded on its own
    assert texts[2] == base64.b64encode(other).decode()


def test_the_memo_keeps_at_most_its_size_and_drops_the_least_recent() -> None:
    size = MEMO_MIN_BYTES * 3
    encoded = len(base64.b64encode(bytes(size)))
    memo = Base64Memo(2 * encoded)  # room for two
    a, b, c = (os.urandom(size) for _ in range(3))

    text_a, text_b = memo.encode(a), memo.encode(b)
    assert memo.encode(a) is text_a  # a is now the more recent of the two
    text_c = memo.encode(c)  # no room for three: b, the least recent, goes

    assert memo.encode(a) is text_a
    assert memo.encode(c) is text_c
    again = memo.encode(b)
    assert again is not text_b  # encoded anew
    assert again == text_b


def test_small_and_oversized_bytes_are_encoded_every_time() -> None:
    memo = Base64Memo(MEMO_MIN_BYTES * 2)
    small = os.urandom(MEMO_MIN_BYTES - 1)
    large = os.urandom(MEMO_MIN_BYTES * 4)  # its text is over the memo's size

    assert memo.encode(small) is not memo.encode(small)
    assert memo.encode(large) is not memo.encode(large)
    assert memo.encode(large) == base64.b64encode(large).decode()

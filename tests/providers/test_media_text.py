"""Inline media as text (``iris.providers.media_text``): the same bytes object sent again is not encoded
again (a conversation re-sends its images every turn), what comes back is always the bytes' own text,
and a request body carrying it is byte for byte what msgspec writes for plain strings."""

from __future__ import annotations

import base64
import os

import msgspec
import pytest

from iris.providers import AudioPart, ImagePart
from iris.providers.http import b64, data_url, json_body
from iris.providers.media_text import MEMO_MIN_BYTES, JsonText, MediaMemo


def _image(data: bytes, mime: str = "image/png") -> ImagePart:
    return ImagePart(mime_type=mime, width=1, height=1, data=data)


def test_the_same_bytes_object_is_encoded_once() -> None:
    data = os.urandom(MEMO_MIN_BYTES * 4)
    text = base64.b64encode(data).decode()

    first, second = b64(_image(data)), b64(_image(data))
    url, url_again = data_url(_image(data)), data_url(_image(data))

    assert first == text
    assert second is first  # remembered, not encoded again
    assert url == f"data:image/png;base64,{text}"
    assert url_again is url
    assert data_url(_image(data, "image/webp")) == f"data:image/webp;base64,{text}"  # its own entry


def test_equal_bytes_in_another_object_and_other_bytes_get_their_own_text() -> None:
    memo = MediaMemo(20 * MEMO_MIN_BYTES)
    data = os.urandom(MEMO_MIN_BYTES * 2)
    copy = bytes(bytearray(data))
    other = os.urandom(MEMO_MIN_BYTES * 2)

    texts = [memo.base64(data), memo.base64(copy), memo.base64(other)]

    assert texts[0] == texts[1] == base64.b64encode(data).decode()
    assert texts[1] is not texts[0]  # keyed by identity: an equal copy is encoded on its own
    assert texts[2] == base64.b64encode(other).decode()


def test_the_memo_keeps_at_most_its_size_and_drops_the_least_recent() -> None:
    size = MEMO_MIN_BYTES * 3
    memo = MediaMemo(2 * (size + 2 * len(base64.b64encode(bytes(size)))))  # room for two entries
    a, b, c = (os.urandom(size) for _ in range(3))

    text_a, text_b = memo.base64(a), memo.base64(b)
    assert memo.base64(a) is text_a  # a is now the more recent of the two
    text_c = memo.base64(c)  # no room for three: b, the least recent, goes

    assert memo.base64(a) is text_a
    assert memo.base64(c) is text_c
    again = memo.base64(b)
    assert again is not text_b  # encoded anew
    assert again == text_b


def test_the_memo_counts_the_bytes_each_entry_keeps_alive() -> None:
    """An entry holds its bytes as well as its text and the text's JSON literal: the bound covers all
    three, or a memo full of texts would keep as much media again alive besides."""
    size = MEMO_MIN_BYTES * 3
    texts = 2 * len(base64.b64encode(bytes(size)))
    memo = MediaMemo(2 * texts + size)  # two entries' texts, but not two entries with their bytes
    a, b = os.urandom(size), os.urandom(size)

    text_a = memo.base64(a)
    memo.base64(b)

    again = memo.base64(a)
    assert again is not text_a  # a went to make room for b
    assert again == text_a


def test_small_and_oversized_bytes_are_encoded_every_time() -> None:
    memo = MediaMemo(MEMO_MIN_BYTES * 2)
    small = os.urandom(MEMO_MIN_BYTES - 1)
    large = os.urandom(MEMO_MIN_BYTES * 4)  # its text is over the memo's size

    assert memo.base64(small) is not memo.base64(small)
    assert memo.base64(large) is not memo.base64(large)
    assert memo.data_url("audio/wav", small) == "data:audio/wav;base64," + base64.b64encode(small).decode()


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    assert isinstance(value, str)
    return str(value)


def test_a_body_with_remembered_media_is_what_msgspec_writes_for_plain_strings() -> None:
    image = _image(os.urandom(MEMO_MIN_BYTES * 2))
    audio = AudioPart(mime_type="audio/wav", data=os.urandom(MEMO_MIN_BYTES))
    body = {
        "messages": [{"content": [{"image_url": {"url": data_url(image)}}, {"audio": b64(audio)}]}],
        "note": JsonText('quotes " and \\ and \n and é'),  # a literal that needs escapes
    }
    plain = _plain(body)  # the same values as exact str

    assert json_body(body) == msgspec.json.encode(plain)
    assert json_body(body) == json_body(body)  # the literals are reused, not spent
    assert msgspec.json.decode(json_body(body)) == plain


def test_anything_else_msgspec_cannot_write_still_fails() -> None:
    with pytest.raises(TypeError):
        json_body({"x": object()})

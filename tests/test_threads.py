"""Opaque thread ids: what is accepted, and the storage segment that stands for each."""

from __future__ import annotations

import uuid

import pytest

from iris.app.errors import Unprocessable
from iris.app.threads import check_thread_id, thread_from_segment, thread_segment

ACCEPTED = [
    "thread_abc123",
    "76DFC56F-4A3B-4C2D-9E1F-0123456789AB",
    str(uuid.uuid4()),
    "a",
    ".",
    "..",
    "ns:thread.v2",
    "x" * 128,
    "A.b-C_d:E",
]


@pytest.mark.parametrize("value", ACCEPTED)
def test_accepted_ids_round_trip_through_their_segment(value: str) -> None:
    assert check_thread_id(value) == value
    segment = thread_segment(value)
    assert thread_from_segment(segment) == value
    assert segment not in {".", ".."}
    assert segment == segment.lower()  # no two ids share a path on a case-insensitive file system
    assert ":" not in segment
    assert "/" not in segment
    assert len(segment) <= 255  # one file-name component


@pytest.mark.parametrize("value", ["", "x" * 129, "a/b", "a b", "a\\b", "ä", "a%2Fb", "a\nb", "~a"])
def test_refused_ids(value: str) -> None:
    with pytest.raises(Unprocessable) as caught:
        check_thread_id(value)
    assert caught.value.code == "invalid_thread_id"
    assert caught.value.field == "threadId"


def test_lower_case_uuids_keep_their_old_paths() -> None:
    """Paths written when thread ids were UUIDs stay valid: a lower-case UUID is its own segment."""
    thread = str(uuid.uuid4())
    assert thread_segment(thread) == thread
    assert thread_segment(thread.upper()) != thread


def test_segments_are_injective_across_case() -> None:
    ids = ["abc", "ABC", "Abc", "aBc", "abc.", "ABC."]
    assert len({thread_segment(i) for i in ids}) == len(ids)


@pytest.mark.parametrize("segment", ["b32.", "b32.MFRGG", "b32.!!", "a.b", "UPPER", "b32.mfrgg===="])
def test_foreign_segments_stand_for_no_thread(segment: str) -> None:
    assert thread_from_segment(segment) is None

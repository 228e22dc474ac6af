"""Reading a run's ``iris/toolProgress`` activity events the way an AG-UI client applies them: the snapshot's
content, then each delta's RFC 6902 operations (the ones Iris sends: add, replace, remove)."""

from __future__ import annotations

import copy
from typing import Any

ACTIVITY_TYPES = ("ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA")


def activity_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's activity events, in order."""
    return [e for e in events if e["type"] in ACTIVITY_TYPES]


def apply_activity(events: list[dict[str, Any]]) -> dict[str, Any]:
    """One activity's content after all its events (a snapshot first, then deltas)."""
    assert events, "no activity"
    assert events[0]["type"] == "ACTIVITY_SNAPSHOT", events[0]
    content: dict[str, Any] = copy.deepcopy(events[0]["content"])
    for event in events[1:]:
        assert event["messageId"] == events[0]["messageId"]
        if event["type"] == "ACTIVITY_SNAPSHOT":
            content = copy.deepcopy(event["content"])
            continue
        for op in event["patch"]:
            _apply(content, op)
    return content


def _apply(content: dict[str, Any], op: dict[str, Any]) -> None:
    tokens = op["path"].split("/")[1:]
    assert tokens, f"a patch of the whole document: {op}"
    *parents, last = tokens
    target: Any = content
    for token in parents:
        target = target[int(token)] if isinstance(target, list) else target[token]
    if op["op"] == "remove":
        del target[int(last) if isinstance(target, list) else last]
    elif isinstance(target, list):
        assert op["op"] == "add", op
        target.append(op["value"]) if last == "-" else target.insert(int(last), op["value"])
    else:
        assert op["op"] == "add" or last in target, f"replace of a member that is not there: {op}"
        target[last] = op["value"]

"""Answers of the run-control endpoints."""

from __future__ import annotations

from typing import Literal

from iris.providers.wire import WireStruct


class CancelOut(WireStruct):
    """``POST /agent/runs/{runId}/cancel``: the request was taken; the run's stream will say when it ended."""

    run_id: str
    status: Literal["cancelling"]

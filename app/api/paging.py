"""The bounds of paging query parameters (``offset``, ``after``): the largest value every engine's
column and bind can hold, so a number past it is a 422 the document states, never a database error.
"""

from __future__ import annotations

from typing import Annotated

from litestar.params import QueryParameter

from iris.app.persistence.models import POSITION_MAX

Offset = Annotated[int, QueryParameter(ge=0, le=POSITION_MAX)]
"""How many rows of a listing to skip."""

AfterPosition = Annotated[int, QueryParameter(ge=-1, le=POSITION_MAX)]
"""History after this message position (-1: from the start)."""

AfterEvent = Annotated[int, QueryParameter(ge=0, le=POSITION_MAX)]
"""A run's events after this event number (0: all); ``Last-Event-ID`` wins over it."""

__all__ = ["POSITION_MAX", "AfterEvent", "AfterPosition", "Offset"]

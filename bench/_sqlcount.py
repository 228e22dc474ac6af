"""Bench-only launcher: ``python -m app serve`` with every SQL statement and commit counted.

Nothing in the app changes: a SQLAlchemy listener on every engine counts cursor executions (an
``executemany`` is one) and commits. ``SIGUSR1`` writes ``"<statements> <commits>"`` to the file named by
``BENCH_SQL_COUNTS``, so a bench can read the counts before and after a batch of runs.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.__main__ import main

_counts = [0, 0]


def _statement(*_args: Any) -> None:
    _counts[0] += 1


def _commit(*_args: Any) -> None:
    _counts[1] += 1


def _dump(_signum: int, _frame: FrameType | None) -> None:
    Path(os.environ["BENCH_SQL_COUNTS"]).write_text(f"{_counts[0]} {_counts[1]}")


if __name__ == "__main__":
    event.listen(Engine, "before_cursor_execute", _statement)
    event.listen(Engine, "commit", _commit)
    signal.signal(signal.SIGUSR1, _dump)
    main(["serve"])

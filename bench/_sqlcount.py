"""Bench-only launcher: ``python -m iris serve`` with every SQL statement and commit counted.

Nothing in the app changes. :func:`count_sql` counts cursor executions (an ``executemany`` is one) and
commits: on SQLite by wrapping Iris's own connection (``iris.app.persistence.sqlite``), since a SQLAlchemy
statement listener would itself turn the writers' direct driver calls back into SQLAlchemy's path
(``iris.app.persistence.repositories._driver_sql``) and the bench would measure that; on PostgreSQL with
SQLAlchemy's listeners. ``SIGUSR1`` writes ``"<statements> <commits>"`` to the file named by
``BENCH_SQL_COUNTS``, so a bench can read the counts before and after a batch of runs.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

_counts = [0, 0]


def count_sql(statement: Callable[[str], None], commit: Callable[[], None]) -> None:
    """Call ``statement(sql)`` for every statement the server runs and ``commit()`` for every commit
    (the database is the one ``IRIS_DATABASE_URL`` names, SQLite when unset)."""
    if os.environ.get("IRIS_DATABASE_URL", "sqlite").startswith("sqlite"):
        import iris.app.persistence.sqlite as sqlite

        run_statement, run_commit = sqlite._statement, sqlite.IrisConnection.commit

        def counted_statement(connection: Any, sql: str, parameters: Any, *, many: bool) -> Any:
            statement(sql)
            return run_statement(connection, sql, parameters, many=many)

        async def counted_commit(self: sqlite.IrisConnection) -> None:
            commit()
            await run_commit(self)

        sqlite._statement = counted_statement
        sqlite.IrisConnection.commit = counted_commit  # type: ignore[method-assign]
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    event.listen(Engine, "before_cursor_execute", lambda *args: statement(args[2]))
    event.listen(Engine, "commit", lambda *_args: commit())


def _statement(_sql: str) -> None:
    _counts[0] += 1


def _commit() -> None:
    _counts[1] += 1


def _dump(_signum: int, _frame: FrameType | None) -> None:
    Path(os.environ["BENCH_SQL_COUNTS"]).write_text(f"{_counts[0]} {_counts[1]}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from iris.app.__main__ import main

    count_sql(_statement, _commit)
    signal.signal(signal.SIGUSR1, _dump)
    main(["serve"])

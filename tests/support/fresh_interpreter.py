"""A script run in a fresh Python interpreter, for what this test process cannot show any more: what a
first import does (it imported everything long ago), or what a process holds at start-up."""

from __future__ import annotations

import subprocess
import sys

from iris.app.persistence.migrations import REPO_ROOT
from tests.support.waits import SUBPROCESS_SECONDS


def run_fresh(script: str, *args: str) -> str:
    """``script`` run with ``args`` from the repository's root; what it printed. A script that exits
    non-zero fails the test with the end of what it wrote to standard error."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout

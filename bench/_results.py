"""Figures as JSON: every bench script also writes what it measured to ``bench/results/`` (git-ignored),
one file per script per run, so two runs (two commits, two machines) can be compared with any JSON tool.

Each script records the figures it prints (``figure(...)``) and calls :meth:`Results.write` at the end;
the file is ``bench/results/{script}-{UTC time}.json``:
``{"script", "startedAt", "finishedAt", "commit", "uncommittedChanges", "python", "figures": {name:
{"value", "unit", "target"?, "met"?}}}``.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def percentile(values: Sequence[float], q: int) -> float:
    """The ``q``-th percentile (1 to 99) of ``values``, inclusive method."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _git(*args: str) -> str | None:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _dirty() -> bool:
    return bool(_git("status", "--porcelain"))


def _commit() -> str | None:
    return _git("rev-parse", "HEAD") or None


class Results:
    """The figures of one run of one script."""

    def __init__(self, script: str, directory: Path = RESULTS) -> None:
        self.script = script
        self.directory = directory
        self.started = dt.datetime.now(dt.UTC)
        self.figures: dict[str, dict[str, Any]] = {}

    def figure(
        self, name: str, value: float | None, unit: str, *, target: str | None = None, met: bool | None = None
    ) -> None:
        """One measured figure (``None`` when it could not be measured), with its target when it has one."""
        entry: dict[str, Any] = {"value": value, "unit": unit}
        if target is not None:
            entry["target"] = target
        if met is not None:
            entry["met"] = met
        self.figures[name] = entry

    def write(self) -> Path:
        """Write the file and say where it went; returns its path."""
        finished = dt.datetime.now(dt.UTC)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.script}-{self.started.strftime('%Y%m%dT%H%M%SZ')}.json"
        document = {
            "script": self.script,
            "startedAt": self.started.isoformat(),
            "finishedAt": finished.isoformat(),
            "commit": _commit(),
            "uncommittedChanges": _dirty(),
            "python": platform.python_version(),
            "figures": self.figures,
        }
        path.write_text(json.dumps(document, indent=2) + "\n")
        print(f"figures written to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return path

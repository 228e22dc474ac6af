"""Figures as JSON: every bench script also writes what it measured to ``bench/results/`` (git-ignored),
one file per script per run, so two runs (two commits, two machines) can be compared with any JSON tool.

Each script records the figures it prints (``figure(...)``) and calls :meth:`Results.write` at the end;
the file is ``bench/results/{script}-{UTC time}.json``:
``{"script", "startedAt", "finishedAt", "commit", "uncommittedChanges", "python", "machine", "figures": {name:
{"value", "unit", "target"?, "met"?}}, "details"?: {name: any JSON}}``. Every figure with a target is
also printed as one row of a table, ``figure | measured | target | met`` (:func:`targets_table`), by the
script and again, for every script of the run, by ``bench/run_all.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Mapping, Sequence
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


def machine() -> str:
    """What the figures were measured on: architecture, cores and the CPU's model name."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")
    return ", ".join(part for part in (platform.machine(), f"{os.cpu_count()} cores", model) if part)


def _commit() -> str | None:
    return _git("rev-parse", "HEAD") or None


class Results:
    """The figures of one run of one script."""

    def __init__(self, script: str, directory: Path = RESULTS) -> None:
        self.script = script
        self.directory = directory
        self.started = dt.datetime.now(dt.UTC)
        self.figures: dict[str, dict[str, Any]] = {}
        self.details: dict[str, Any] = {}

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

    def detail(self, name: str, value: Any) -> None:
        """Something measured beside the figures (a per-phase table, load averages), JSON-able."""
        self.details[name] = value

    def print_targets(self) -> None:
        """The figures that have a target, one row each, beside their targets."""
        print(targets_table(self.figures, f"{self.script}: targets"))

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
            "machine": machine(),
            "figures": self.figures,
        }
        if self.details:
            document["details"] = self.details
        path.write_text(json.dumps(document, indent=2) + "\n")
        print(f"figures written to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return path


def _measured(value: Any, unit: str) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, float):
        value = f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value} {unit}".strip()


def _verdict(met: Any) -> str:
    return "n/a" if met is None else ("met" if met else "NOT met")


def targets_table(figures: Mapping[str, Mapping[str, Any]], title: str) -> str:
    """``figure | measured | target | met`` for every figure with a target (Markdown, so it pastes)."""
    rows = [
        (name, _measured(entry.get("value"), str(entry.get("unit", ""))), str(entry["target"]),
         _verdict(entry.get("met")))
        for name, entry in figures.items()
        if "target" in entry
    ]  # fmt: skip
    header = ("figure", "measured", "target", "met")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    lines = [
        title,
        *(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]),
    ]
    lines.insert(2, "-+-".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)

"""docs/benchmarks.md, written from bench/results/*.json: the latest pass of each benchmark as one table.

``just bench`` runs it last (bench/run_all.py); ``python bench/report.py`` runs it alone. The page is
never edited by hand: tests/test_bench_results.py regenerates it from the committed JSON files and
fails when the two differ. How the figures are taken and read is bench/README.md.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

PEER_SURFACES = ("iris /agent/runs", "iris /api/llm/chat", "iris /v1/chat/completions", "litellm")
"""bench/peers.py's targets, Iris's three surfaces and the LiteLLM proxy, as its details name them."""
PEER_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("sequential", "added_first_text_ms", "added time to first text, sequential p50", "ms"),
    ("sequential", "added_total_ms", "added time to the whole answer, sequential p50", "ms"),
    ("loop", "req_per_s", "c=16 closed loop", "req/s"),
    ("loop", "first_byte_p99_ms", "c=16 time to first byte, p99", "ms"),
    ("loop", "cpu_per_request_ms", "c=16 server CPU per request", "ms"),
    ("loop", "peak_rss_mib", "peak RSS after the loops", "MiB"),
)
HEADLINE_SUFFIXES = ("per_request_50_chunks_M", "per_chunk_k", "cpu_per_run_ms")
"""Of a benchmark without targets, the figures the page shows (the rest stay in its JSON file)."""
BEFORE = re.compile(r"^[0-9a-f]{7,40} |^\S+@")
"""A figure of an earlier commit measured beside this tree (``--before``): ``735252b runs: …``, ``x@main``."""
GROUPED = ("upstream connections/request",)
"""Targeted figures shown as one row when every one of them is met (the row says how many)."""


def latest_documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The newest document of each script among ``paths``, sorted by script name."""
    newest: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            document = json.loads(path.read_text())
            script, started = document["script"], document["startedAt"]
        except (ValueError, KeyError, TypeError):
            continue  # a half-written file or another format: not a pass
        if script not in newest or started > newest[script]["startedAt"]:
            newest[script] = document
    return [newest[script] for script in sorted(newest)]


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _loads(document: Mapping[str, Any]) -> list[float]:
    """Every 1-minute load average the document recorded (details' ``load`` or a ``*load_average`` figure)."""
    found: list[float] = []
    load = document.get("details", {}).get("load")
    stack: list[Any] = [load]
    while stack:
        item = stack.pop()
        if isinstance(item, int | float) and not isinstance(item, bool):
            found.append(float(item))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    for name, entry in document["figures"].items():
        if name.endswith("load_average") and isinstance(entry.get("value"), int | float):
            found.append(float(entry["value"]))
    return found


def heading(document: Mapping[str, Any]) -> list[str]:
    """The section's title: the benchmark, when, which commit, under what load, on what machine."""
    loads = _loads(document)
    low, high = (f"{min(loads):.1f}", f"{max(loads):.1f}") if loads else ("", "")
    load = "not recorded" if not loads else (low if low == high else f"{low}\N{EN DASH}{high}")
    dirty = " with uncommitted changes" if document.get("uncommittedChanges") else ""
    machine = f", machine {document['machine']}" if "machine" in document else ""
    when = document["startedAt"][:16].replace("T", " ")
    commit = str(document.get("commit"))[:7]
    return [f"## {document['script']}: {when} UTC, commit `{commit}`{dirty}, load {load}{machine}", ""]


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def peers_table(document: Mapping[str, Any]) -> list[str]:
    """Iris's three surfaces beside the LiteLLM proxy, each on the same fake upstream in one run."""
    details = document.get("details", {})
    rows = []
    for phase, key, label, unit in PEER_ROWS:
        cells = [_number(details.get(phase, {}).get(surface, {}).get(key)) for surface in PEER_SURFACES]
        rows.append([f"{label} ({unit})", *cells])
    return table(
        ["figure", "`/agent/runs`", "`/api/llm/chat`", "`/v1/chat/completions`", "LiteLLM proxy"], rows
    )


def targets(figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``figure | measured | target | met`` for every figure with a target."""
    rows = [
        [name, f"{_number(entry.get('value'))} {entry.get('unit', '')}".strip(), str(entry["target"]),
         "—" if entry.get("met") is None else ("met" if entry["met"] else "**not met**")]
        for name, entry in figures.items()
        if "target" in entry
    ]  # fmt: skip
    return table(["figure", "measured", "target", "met"], rows) if rows else []


def grouped(figures: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``figures`` with each ``GROUPED`` family, when all of it is met, folded into one row."""
    kept: dict[str, Mapping[str, Any]] = {}
    for prefix in GROUPED:
        family = [entry for name, entry in figures.items() if name.startswith(prefix) and "target" in entry]
        if family and all(entry.get("met") for entry in family):
            worst = max((entry.get("value") or 0 for entry in family), default=0)
            kept[f"{prefix}, all {len(family)} phases"] = {**family[0], "value": worst}
    for name, entry in figures.items():
        if not any(name.startswith(prefix) and f"{prefix}, all" in " ".join(kept) for prefix in GROUPED):
            kept[name] = entry
    return kept


def untargeted(figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The headline figures of a benchmark that sets no target: this tree's, not ``--before`` ones."""
    names = [name for name in figures if name.endswith(HEADLINE_SUFFIXES) and not BEFORE.match(name)]
    rows = [
        [name, f"{_number(figures[name].get('value'))} {figures[name].get('unit', '')}".strip()]
        for name in names
    ]
    return table(["figure", "measured"], rows)


def section(document: Mapping[str, Any]) -> list[str]:
    """One benchmark's heading and table(s)."""
    body = targets(grouped(document["figures"]))
    if document["script"] == "peers":
        body = [*peers_table(document), "", *body]
    return [*heading(document), *(body or untargeted(document["figures"])), ""]


def render(paths: Iterable[Path]) -> str:
    """The whole page for the JSON files ``paths``."""
    lines = [
        "# Benchmarks",
        "",
        "Written by `just bench` (`bench/report.py`) from `bench/results/*.json`; never edited by hand.",
        "The latest pass of each benchmark. How each is measured and how to read it: `bench/README.md`",
        "in the repository. Compare only figures measured side by side in one run:",
        "absolute figures move with the machine's load (the 1-minute load average, given for each pass).",
        "Files that do not record their machine are from the project's shared 2-core machine.",
        "",
    ]
    for document in latest_documents(paths):
        lines.extend(section(document))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str] = ()) -> int:
    """Write the page from every JSON file under bench/results/ (or the files named)."""
    paths = [Path(arg) for arg in argv] or sorted(RESULTS.glob("*.json"))
    PAGE.write_text(render(paths))
    print(f"{PAGE.relative_to(ROOT)} written from {len(paths)} result files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

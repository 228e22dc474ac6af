"""Run every benchmark script in bench/ (each prints its own figures and writes them as JSON under
bench/results/, see _results.py).

Benchmarks measure speed and memory against targets stated in their issues; they are never
timed tests. Each script is standalone: `python bench/<name>.py`. At the end, bench/report.py writes
docs/benchmarks.md from the results. bench/probes/ (one-decision probes) is not run. The method is
bench/README.md.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import report
from _results import RESULTS, targets_table

HERE = Path(__file__).resolve().parent


def targets_of_this_run(since: dt.datetime) -> dict[str, dict[str, Any]]:
    """Every figure with a target that a script wrote since ``since``, named ``script: figure``."""
    figures: dict[str, dict[str, Any]] = {}
    for path in sorted(RESULTS.glob("*.json")):
        try:
            document = json.loads(path.read_text())
            if dt.datetime.fromisoformat(document["startedAt"]) < since:
                continue
            named = document["figures"].items()
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # an older format or a half-written file: not this run's
        figures |= {f"{document['script']}: {name}": entry for name, entry in named if "target" in entry}
    return figures


def main() -> int:
    not_benchmarks = {"run_all.py", "report.py"}
    scripts = sorted(
        p for p in HERE.glob("*.py") if p.name not in not_benchmarks and not p.name.startswith("_")
    )
    if not scripts:
        print("no benchmarks yet: bench/<name>.py scripts appear with the issues that set speed targets")
        return 0
    since = dt.datetime.now(dt.UTC)
    failed = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        failed += subprocess.run([sys.executable, str(script)], check=False).returncode != 0
    print()
    print(targets_table(targets_of_this_run(since), "== every target of this run"))
    report.main()  # docs/benchmarks.md from the results, this run's among them
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run every benchmark script in bench/ (each prints its own figures and writes them as JSON under
bench/results/, see _results.py).

Benchmarks measure speed and memory against targets stated in their issues; they are never
timed tests. Each script is standalone: `python bench/<name>.py`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != "run_all.py" and not p.name.startswith("_"))
    if not scripts:
        print("no benchmarks yet: bench/<name>.py scripts appear with the issues that set speed targets")
        return 0
    failed = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        failed += subprocess.run([sys.executable, str(script)], check=False).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""``bench/_results.py``: what `just bench` leaves behind to compare runs (the figures, not their speed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from app.persistence.migrations import REPO_ROOT


def _results_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_results", REPO_ROOT / "bench" / "_results.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_json_file_per_script_run_with_its_figures(tmp_path: Path) -> None:
    results = _results_module().Results("upload", directory=tmp_path)
    results.figure("upload_throughput", 412.5, "MB/s")
    results.figure("ratio_upload_to_disk_time", 1.8, "x", target="<= 3", met=True)
    results.figure("unmeasured", None, "ms")

    path = results.write()

    assert path.parent == tmp_path
    assert path.name.startswith("upload-")
    assert path.suffix == ".json"
    document = json.loads(path.read_text())
    assert document["script"] == "upload"
    assert len(document["commit"]) == 40
    assert isinstance(document["uncommittedChanges"], bool)
    assert document["figures"] == {
        "upload_throughput": {"value": 412.5, "unit": "MB/s"},
        "ratio_upload_to_disk_time": {"value": 1.8, "unit": "x", "target": "<= 3", "met": True},
        "unmeasured": {"value": None, "unit": "ms"},
    }
    assert document["startedAt"] <= document["finishedAt"]


def test_results_are_git_ignored() -> None:
    assert "bench/results/" in (REPO_ROOT / ".gitignore").read_text().splitlines()

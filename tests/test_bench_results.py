"""``bench/_results.py``: what `just bench` leaves behind to compare runs (the figures, not their speed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType

from iris.app.persistence.migrations import REPO_ROOT


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


def test_details_are_written_beside_the_figures_only_when_there_are_some(tmp_path: Path) -> None:
    module = _results_module()
    plain = module.Results("plain", directory=tmp_path / "plain")
    plain.figure("x", 1.0, "ms")
    detailed = module.Results("detailed", directory=tmp_path / "detailed")
    detailed.detail("loop iris", {"req_per_s": 40.5, "client_saturated": False})

    assert "details" not in json.loads(plain.write().read_text())
    assert json.loads(detailed.write().read_text())["details"] == {
        "loop iris": {"req_per_s": 40.5, "client_saturated": False}
    }


def test_the_targets_table_has_one_row_per_figure_with_a_target() -> None:
    module = _results_module()
    figures = {
        "ratio_total_p50": {"value": 2.41, "unit": "x", "target": "<= 2.0", "met": False},
        "concurrent_errors": {"value": 0, "unit": "of 500", "target": "0", "met": True},
        "peak RSS ÷ LiteLLM's": {"value": None, "unit": "x", "target": "<= 0.25"},
        "baseline_cpu_per_request": {"value": 2.0, "unit": "ms"},
    }

    lines = module.targets_table(figures, "runs: targets").splitlines()

    assert lines[0] == "runs: targets"
    assert [cell.strip() for cell in lines[1].split("|")] == ["figure", "measured", "target", "met"]
    rows = [[cell.strip() for cell in line.split("|")] for line in lines[3:]]
    assert rows == [
        ["ratio_total_p50", "2.41 x", "<= 2.0", "NOT met"],
        ["concurrent_errors", "0 of 500", "0", "met"],
        ["peak RSS ÷ LiteLLM's", "not measured", "<= 0.25", "n/a"],
    ]


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report", REPO_ROOT / "bench" / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _committed_results() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "bench/results/*.json"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return [REPO_ROOT / line for line in listed.stdout.splitlines()]


def test_the_benchmarks_page_is_what_the_committed_results_make() -> None:
    committed = _committed_results()
    assert committed, "bench/results/ holds no committed JSON file"

    page = _report_module().render(committed)

    on_disk = (REPO_ROOT / "docs" / "benchmarks.md").read_text()
    assert on_disk == page, (
        "docs/benchmarks.md differs from `python bench/report.py`'s: regenerate it, never edit it"
    )
    assert len(page.splitlines()) <= 100


def test_the_page_takes_each_scripts_newest_pass_and_says_when_and_under_what_load(tmp_path: Path) -> None:
    module = _results_module()
    older = module.Results("upload", directory=tmp_path)
    older.figure("ratio_upload_to_disk_time", 2.9, "x", target="<= 3", met=True)
    older.started = older.started.replace(year=2020)
    older.write()
    newer = module.Results("upload", directory=tmp_path)
    newer.figure("ratio_upload_to_disk_time", 3.4, "x", target="<= 3", met=False)
    newer.figure("load_average", 1.25, "")
    newer.write()

    page = _report_module().render(sorted(tmp_path.glob("*.json")))

    assert "| ratio_upload_to_disk_time | 3.4 x | <= 3 | **not met** |" in page
    assert "2.9 x" not in page
    assert f"## upload: {newer.started.strftime('%Y-%m-%d %H:%M')} UTC" in page
    assert "load 1.2, machine " in page or "load 1.3, machine " in page

"""docs/operations.md lists every metric family Iris records, and the Grafana dashboard in examples/
queries only families that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

from iris.app.telemetry.metrics import HTTP_PREFIX, Metrics, process_metrics

ROOT = Path(__file__).resolve().parent.parent.parent
HTTP_FAMILIES = {
    f"{HTTP_PREFIX}_{name}"
    for name in ("requests", "request_duration_seconds", "requests_in_progress", "requests_error")
}


def families() -> set[str]:
    metrics = process_metrics()
    return {getattr(metrics, field)._name for field in Metrics.__dataclass_fields__} | HTTP_FAMILIES


def test_the_operations_page_lists_every_family() -> None:
    page = (ROOT / "docs" / "operations.md").read_text()
    listed = set(re.findall(r"^\| `([a-z_]+?)(?:_total)?` \|", page, re.MULTILINE))
    assert listed == families()


def test_the_dashboard_queries_existing_families() -> None:
    dashboard = json.loads((ROOT / "examples" / "grafana-dashboard.json").read_text())
    queried = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b((?:iris|gen_ai)_[a-z_]+)[{\[]", target["expr"])
    }
    assert queried
    assert queried <= families(), queried - families()

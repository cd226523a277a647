"""deploy/grafana/webhook-receiver.json: a dashboard Grafana provisions as it is, on any
Prometheus (a data-source variable) and for the sources chosen (a source variable), with
the panels the on-call engineer looks for. That every expression reads what /metrics serves
is checked against the real processes in tests/test_metrics_served.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.promql import reads

DASHBOARD = ROOT / "deploy" / "grafana" / "webhook-receiver.json"
LABEL_VALUES = re.compile(r"^label_values\((\w+),\s*(\w+)\)$")


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def expr(panel: dict[str, Any]) -> list[str]:
    return [t["expr"] for t in panel["targets"]]


def expressions() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]


def variable_queries() -> list[tuple[str, str]]:
    """(metric, label) of each `label_values(metric, label)` variable."""
    found = []
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            match = LABEL_VALUES.match(variable["query"]["query"])
            assert match, variable["query"]
            found.append((match.group(1), match.group(2)))
    return found


def test_it_is_provisionable_as_it_is() -> None:
    """No `__inputs` to fill in (an export "for sharing externally" has them), a fixed uid
    so provisioning updates it in place, and no database id."""
    board = dashboard()
    assert "__inputs" not in board and board["id"] is None
    assert board["uid"] == "webhook-receiver" and board["title"] and board["schemaVersion"]


def test_every_panel_queries_the_chosen_prometheus() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    chosen = {"type": "prometheus", "uid": "${datasource}"}
    for panel in panels():
        assert panel["datasource"] == chosen, panel["title"]
        assert all(t["datasource"] == chosen for t in panel["targets"]), panel["title"]
    assert variables["source"]["datasource"] == chosen


def test_the_source_variable_lists_the_sources_and_every_source_series_is_filtered_by_it() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    source = variables["source"]
    assert source["multi"] and source["includeAll"] and source["allValue"] == ".*"
    assert variable_queries() == [("webhooks_received_total", "source")]
    per_source = {
        "webhooks_received_total",
        "webhooks_rejected_total",
        "webhooks_ack_seconds_bucket",
        "webhooks_last_accepted_timestamp_seconds",
        "webhooks_source_expected_silence_seconds",
        "webhooks_worker_outcomes_total",
        "webhooks_worker_type_outcomes_total",
    }
    for expr in expressions():
        for name in set(reads(expr).metrics) & per_source:
            selectors = re.findall(rf"{name}\{{([^}}]*)\}}", expr)
            assert selectors and all('source=~"$source"' in s for s in selectors), expr


# What the issue asks the dashboard to show, as (panel title, metric read, labels grouped by).
WANTED = [
    ("Deliveries by outcome, per source", "webhooks_received_total", {"source", "outcome"}),
    ("Acknowledgement latency", "webhooks_ack_seconds_bucket", {"le"}),
    ("Queue depth and retries", "webhooks_queue_depth", set()),
    ("Oldest queued event's age", "webhooks_oldest_queued_age_seconds", set()),
    ("Attempts per source and type", "webhooks_worker_type_outcomes_total", {"source", "type"}),
    ("Dead letters per source and type", "webhooks_worker_type_outcomes_total", {"source", "type"}),
    ("Worker throughput, by outcome", "webhooks_worker_outcomes_total", {"outcome"}),
    ("Replica acknowledgements", "webhooks_rejected_total", {"source"}),
]


@pytest.mark.parametrize(("title", "metric", "grouped"), WANTED, ids=[w[0] for w in WANTED])
def test_the_panel_is_there_and_reads_its_metric(
    title: str, metric: str, grouped: set[str]
) -> None:
    panel = next((p for p in panels() if p["title"] == title), None)
    assert panel is not None, f"no panel {title!r}"
    found = [reads(t["expr"]) for t in panel["targets"]]
    assert any(metric in r.metrics and grouped <= r.grouped for r in found), title


def test_latency_shows_the_median_p90_and_p99() -> None:
    panel = next(p for p in panels() if p["title"] == "Acknowledgement latency")
    quantiles = {
        re.match(r"histogram_quantile\(([\d.]+),", t["expr"]).group(1) for t in panel["targets"]
    }  # type: ignore[union-attr]
    assert quantiles == {"0.5", "0.9", "0.99"}


def test_panels_do_not_overlap() -> None:
    taken: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        box = panel["gridPos"]
        cells = {
            (x, y)
            for x in range(box["x"], box["x"] + box["w"])
            for y in range(box["y"], box["y"] + box["h"])
        }
        assert box["x"] + box["w"] <= 24 and not cells & taken, panel["title"]
        taken |= cells

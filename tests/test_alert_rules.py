"""deploy/prometheus/webhook-alerts.yml: promtool accepts it; its unit tests pass, each alert
firing on series that should fire it and staying quiet just under its threshold, and they
fail when a threshold moves; each alert tells the on-call engineer where to look, which
`webhooks` command to run, and links its runbook section.

promtool comes from Debian's `prometheus` package (.ci/run installs it). Under CI (CI=true)
a missing promtool fails these tests; elsewhere they are skipped, saying why. What the
rules read is checked against the real processes' /metrics in tests/test_metrics_served.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

import app.errors
import app.keyfetch
from app.errors import WebhookError
from tests.conftest import ROOT
from tests.promql import reads, served, unserved
from tests.test_docs_links import HEADING, Page, slug
from workers.ops.cli import main

RULES = ROOT / "deploy" / "prometheus" / "webhook-alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "webhook-alerts.test.yml"
OPERATIONS = ROOT / "docs" / "operations.md"
# The alerts that count the receiver's 5xx answers, each a share of the reasons.
FIVE_XX_ALERTS = ("WebhookReceiver5xx", "WebhookQueueUnavailable", "WebhookReplicaAcksFailing")


def rules() -> list[dict[str, Any]]:
    loaded = yaml.safe_load(RULES.read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


def alert(name: str) -> dict[str, Any]:
    return next(rule for rule in rules() if rule["alert"] == name)


@pytest.fixture
def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("promtool is missing: .ci/run installs Debian's prometheus package for it")
    pytest.skip("promtool is not installed (apt-get install prometheus): rules not checked")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)


def test_promtool_accepts_the_rules(promtool: str) -> None:
    checked = run(promtool, "check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rules())} rules found" in checked.stdout


def test_each_alert_fires_on_its_series_and_stays_quiet_under_its_threshold(
    promtool: str,
) -> None:
    tested = run(promtool, "test", "rules", str(RULE_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_each_alert_has_a_test_that_fires_it_and_one_where_it_must_not() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in rules()}
    assert (names - firing, names - quiet) == (set(), set())


# A threshold (or an aggregation) moved in one alert, and the promtool test that must catch it.
MOVED = [
    ("WebhookQueueBacklog", "> 1000", ">= 1000"),
    ("WebhookOldestEventWaiting", "> 300", ">= 300"),
    ("WebhookDeadLettersGrowing", "[15m])) > 0", "[15m])) >= 0"),
    ("WebhookSourceSilent", "> on (source)", ">= on (source)"),
    ("WebhookSourceSilent", "timestamp_seconds > 0)", "timestamp_seconds)"),
    ("WebhookSourceSilent", "silence_seconds > 0)", "silence_seconds)"),
    ("WebhookReceiver5xx", ">= 3", ">= 2"),
    ("WebhookReceiver5xx", 'key_unavailable"', 'key_unavailable|queue_unavailable"'),
    ("WebhookQueueUnavailable", ">= 3", ">= 2"),
    ("WebhookQueueUnavailable", "sum(increase", "max(increase"),
    ("WebhookSignatureFailures", ">= 5", ">= 4"),
    ("WebhookSignatureFailures", "> sum by", "> 0.4 * sum by"),
    ("WebhookSignatureFailures", "unless sum", "and sum"),
    ("WebhookWorkersAbsent", "for: 5m", "for: 2m"),
    ("WebhookQueueNotDraining", "== 0", "< 0.01"),
    ("WebhookReplicaAcksFailing", ">= 3", ">= 2"),
    ("WebhookSchedulerAbsent", "webhooks_scheduler_up) == 0", "webhooks_scheduler_up) < 2"),
    ("WebhookSlowAcks", "> 1", "> 0.4"),
    ("WebhookRedisUnreachable", "for: 2m", "for: 0m"),
    ("WebhookMetricsAbsent", "absent(webhooks_redis_up)", "absent(webhooks_redis_down)"),
    # On a cluster: the shards summed, and each shard judged on its own.
    ("WebhookQueueBacklog", "sum(max by (shard)", "max(max by (shard)"),
    ("WebhookWorkersAbsent", "max by (shard) (webhooks_workers)", "max(webhooks_workers)"),
    ("WebhookQueueNotDraining", "sum by (shard) (max", "sum(max"),
    (
        "WebhookSchedulerAbsent",
        "max by (shard) (webhooks_scheduler_up)",
        "min(webhooks_scheduler_up)",
    ),
]


def rule_tests_of(name: str) -> dict[str, Any]:
    """The rule tests with only the cases that check alert `name`: a moved threshold must be
    caught by its own alert's tests, and promtool then evaluates a fraction of the series."""
    loaded = yaml.safe_load(RULE_TESTS.read_text())
    loaded["tests"] = [
        case
        for case in loaded["tests"]
        if any(check["alertname"] == name for check in case.get("alert_rule_test", []))
    ]
    assert loaded["tests"], f"no rule test checks {name}"
    return loaded


@pytest.mark.parametrize(("name", "old", "new"), MOVED, ids=[f"{n}:{o}" for n, o, _ in MOVED])
def test_the_rule_tests_fail_when_a_threshold_moves(
    promtool: str, tmp_path: Path, name: str, old: str, new: str
) -> None:
    text = RULES.read_text()
    start = text.index(f"- alert: {name}\n")
    end = text.find("- alert: ", start + 1)
    block = text[start : end if end > 0 else len(text)]
    assert block.count(old) == 1, f"{old!r} is not once in {name}"
    (tmp_path / RULE_TESTS.name).write_text(yaml.safe_dump(rule_tests_of(name)))
    shutil.copy(RULES, tmp_path / RULES.name)
    unmoved = run(promtool, "test", "rules", str(tmp_path / RULE_TESTS.name))
    assert unmoved.returncode == 0, unmoved.stdout + unmoved.stderr
    (tmp_path / RULES.name).write_text(text.replace(block, block.replace(old, new)))
    tested = run(promtool, "test", "rules", str(tmp_path / RULE_TESTS.name))
    assert tested.returncode != 0, f"nothing caught {name}: {old} -> {new}"


def runbook_anchors() -> set[str]:
    """The anchors of the headings under docs/operations.md's "Runbook"."""
    prose = Page(OPERATIONS, OPERATIONS.read_text()).prose
    section = prose.split("\n## Runbook\n", 1)[1].split("\n## ", 1)[0]
    return {slug(match.group(2)) for match in HEADING.finditer(section)}


def test_each_alert_has_a_summary_a_description_and_its_runbook_section() -> None:
    anchors = runbook_anchors()
    for rule in rules():
        notes, name = rule["annotations"], rule["alert"]
        assert notes["summary"].strip() and len(notes["description"]) > 80, name
        assert notes["runbook_url"] == f"docs/operations.md#{name.lower()}"
        assert name.lower() in anchors, f"no runbook section for {name}"


def commands_in(text: str) -> list[list[str]]:
    rendered = text.replace("{{ $labels.source }}", "stripe")
    return [shlex.split(span) for span in re.findall(r"`(webhooks [^`]+)`", rendered)]


def resolve(words: list[str]) -> list[str]:
    """What of a `webhooks ...` command line is not a command or option the CLI has (its
    subcommands resolved as click resolves them: `replay SOURCE` is `replay provider`)."""
    command: click.Command | None = main
    args = words[1:]
    while isinstance(command, click.Group):
        if not args:
            return [f"a subcommand of {shlex.join(words)}"]
        try:
            _, command, args = command.resolve_command(click.Context(command), args)
        except click.UsageError:
            return [f"no command {args[0]}"]
    assert command is not None
    options = {opt for param in command.params for opt in param.opts}
    return [a for a in args if a.startswith("--") and a.split("=")[0] not in options]


def test_each_description_names_a_webhooks_command_that_exists() -> None:
    for rule in rules():
        named = commands_in(rule["annotations"]["description"])
        assert named, f"{rule['alert']} names no `webhooks` command"
        for words in named:
            assert resolve(words) == [], f"{rule['alert']}: {shlex.join(words)}"


def test_every_5xx_reason_is_counted_by_exactly_one_alert() -> None:
    def subclasses(cls: type[WebhookError]) -> set[type[WebhookError]]:
        found = set(cls.__subclasses__())
        return found.union(*(subclasses(sub) for sub in found))

    assert app.errors and app.keyfetch  # imported: their errors are the subclasses
    reasons = {e.reason for e in subclasses(WebhookError) if e.status_code >= 500}
    counted = [
        {value for label, value in reads(alert(name)["expr"]).values if label == "reason"}
        for name in FIVE_XX_ALERTS
    ]
    assert sorted(r for share in counted for r in share) == sorted(reasons)


def test_a_misspelt_metric_label_or_value_is_reported() -> None:
    """The check of tests/test_metrics_served.py, shown able to fail."""
    series = served(
        'webhooks_rejected_total{reason="queue_unavailable",source="stripe"} 1.0\n'
        "webhooks_queue_depth 0.0\n"
    )
    assert (
        unserved('sum by (source) (webhooks_rejected_total{reason="queue_unavailable"})', series)
        == []
    )
    assert unserved("webhooks_queue_dept > 0", series) == ["metric webhooks_queue_dept"]
    assert unserved('webhooks_rejected_total{kind="x"}', series) == [
        "label webhooks_rejected_total{kind}",
        'value kind="x"',
    ]
    assert unserved('webhooks_rejected_total{reason="not_replicate"}', series) == [
        'value reason="not_replicate"'
    ]
    assert unserved("sum by (type) (webhooks_rejected_total)", series) == ["label type (by/on)"]

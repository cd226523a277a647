"""The metric names and label names a PromQL expression reads, and those /metrics serves.

Enough of PromQL for what the alert rules and the Grafana dashboard write: selectors with
matchers, ranges and subqueries, functions, aggregations with `by`/`without`, vector
matching with `on`/`ignoring`/`group_left`, and Grafana's `$variables`. A construct it does
not know (a selector without a name) fails loudly rather than being skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Labels Prometheus adds to every scraped series itself.
TARGET_LABELS = frozenset({"instance", "job"})
AGGREGATIONS = frozenset({"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                          "count_values", "bottomk", "topk", "quantile"})  # fmt: skip
KEYWORDS = AGGREGATIONS | {"by", "without", "on", "ignoring", "group_left", "group_right",
                           "and", "or", "unless", "bool", "offset", "inf", "nan"}  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_NAME = re.compile(r"(?<![\w$.:])([A-Za-z_:][\w:]*)(\s*\{[^}]*\})?")
_MATCHER = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+\S+")
_SAMPLE_LABEL = re.compile(r'([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"')
# A matcher on a literal value, or on literal values joined by `|` (Grafana's `$source` is not).
_LITERAL_MATCHER = re.compile(r'([A-Za-z_]\w*)\s*(?:=~|=)\s*"([\w|.-]*)"')

Series = dict[str, dict[str, set[str]]]


@dataclass
class Reads:
    """What one expression reads: each metric with the labels its matchers name, and the
    labels its groupings and vector matchings name (of any of its metrics)."""

    metrics: dict[str, set[str]] = field(default_factory=dict)
    grouped: set[str] = field(default_factory=set)
    # The label values its matchers name literally: (label, value).
    values: set[tuple[str, str]] = field(default_factory=set)


def reads(expr: str) -> Reads:
    found = Reads()
    for label, alternatives in _LITERAL_MATCHER.findall(expr):
        found.values |= {(label, value) for value in alternatives.split("|") if value}
    text = _STRING.sub('""', expr)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana's variables, wherever they are
    text = _RANGE.sub("", text)
    for match in _GROUPING.finditer(text):
        found.grouped |= {label.strip() for label in match.group(2).split(",") if label.strip()}
    text = _GROUPING.sub(" ", text)
    if re.search(r"(?<![\w:])\{", text):
        raise ValueError(f"a selector without a metric name: {expr!r}")
    for match in _NAME.finditer(text):
        name, matchers = match.group(1), match.group(2)
        after = text[match.end() :].lstrip()
        if name.lower() in KEYWORDS or (not matchers and after.startswith("(")):
            continue  # a keyword, or a function's name
        labels = set(_MATCHER.findall(matchers or ""))
        found.metrics.setdefault(name, set()).update(labels)
    return found


def served(exposition: str) -> Series:
    """Each series name of a /metrics page, with each label's values in its samples."""
    series: Series = {}
    for line in exposition.splitlines():
        match = _SAMPLE.match(line)
        if match:
            labels = series.setdefault(match.group(1), {})
            for label, value in _SAMPLE_LABEL.findall(match.group(2) or ""):
                labels.setdefault(label, set()).add(value)
    return series


def unserved(
    expr: str, series: Series, grouped_elsewhere: frozenset[str] = frozenset()
) -> list[str]:
    """What `expr` reads that `series` does not have, in words; empty when all is served.
    `grouped_elsewhere`: labels it may group by that only another deployment serves (a
    cluster's `shard`, checked on a cluster's /metrics)."""
    found = reads(expr)
    problems = []
    for name, labels in found.metrics.items():
        if name not in series:
            problems.append(f"metric {name}")
            continue
        problems += [
            f"label {name}{{{label}}}" for label in labels - set(series[name]) - TARGET_LABELS
        ]
    read = [series.get(name, {}) for name in found.metrics]
    known = set().union(*(set(labels) for labels in read)) | TARGET_LABELS | grouped_elsewhere
    problems += [f"label {label} (by/on)" for label in sorted(found.grouped - known)]
    for label, value in sorted(found.values):
        if not any(value in labels.get(label, set()) for labels in read):
            problems.append(f'value {label}="{value}"')
    if not found.metrics:
        problems.append("no metric at all")
    return problems

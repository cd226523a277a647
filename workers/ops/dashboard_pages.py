"""What the dashboard adds to rq-dashboard's own pages: readable metadata and the Events link.

- A job's *Metadata* was `json.dumps(job.meta)`: a blob with Unix timestamps. For an
  event's job it becomes lines an operator reads at 3 a.m.: source, type, event id, status,
  attempts, last error, where each handler stands and how each one's turn at the last
  attempt ended, and times in ISO 8601 (UTC); other jobs get one `key: value` per line.
  The page inserts it as text (`dashboard_guard.escape_rq_dashboard`): errors quote
  provider-controlled payloads.
- The navigation bar gets an *Events* entry (`workers/ops/events_page`).
- The webhook queue's failed list says what it holds: dead letters, events whose retry
  budget is spent (or that raised PermanentError), with where to read and requeue them.
The template edits are exact: an rq-dashboard upgrade that moves their anchors fails
loudly (`TemplateEditMissing`), and a test loads every edited template.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, jsonify

from app.formats import iso
from app.jobstate import JobMeta, UnreadableJob
from app.turns import Turn

# (template, pattern, replacement): each pattern must match exactly once.
TEMPLATE_EDITS: tuple[tuple[str, str, str], ...] = (
    (
        "rq_dashboard/job.html",
        r"<strong>Metadata</strong>:<br>(<%- d\.metadata %>)</p>",
        r'<strong>Metadata</strong>:</p><pre class="metadata">\1</pre>',
    ),
    (
        "rq_dashboard/jobs.html",
        r'(\n\s*<p class="intro">)',
        "\n{% if dead_letters.shown(queue.name, registry_name) %}"
        '<h1 id="dead-letters">Dead letters</h1>{% endif %}\\1',
    ),
    (
        "rq_dashboard/jobs.html",
        r"(This list below contains all the queued jobs on queue "
        r"<strong>\{\{ queue\.name \}\}</strong>\.)</p>",
        "{% if dead_letters.shown(queue.name, registry_name) %}"
        '<span id="dead-letters-intro">The events of queue <strong>{{ queue.name }}</strong> '
        "whose retry budget is spent: each failed {{ dead_letters.budget }}, or raised "
        "PermanentError. RQ keeps them a year. Read them on the "
        "<a href=\"{{ url_for('events.index', status='dead') }}\">Events page</a> "
        "or with <code>webhooks dead list</code>; requeued (from an event's page, "
        "Requeue All or <code>webhooks dead requeue</code>), each gets its full budget "
        "again.</span>{% else %}\\1{% endif %}</p>",
    ),
    (
        "rq_dashboard/navbar.html",
        r"(>Workers</a>\s*</li>)",
        '\\1\n<li class="nav-item"><a href="{{ url_for(\'events.index\') }}" '
        'class="nav-link">Events</a></li>',
    ),
)


@dataclass(frozen=True, slots=True)
class DeadLetterList:
    """What the jobs page's edit needs to label the webhook queue's failed list."""

    queue: str
    max_retries: int

    def shown(self, queue: str, registry: str) -> bool:
        return registry == "failed" and queue == self.queue

    @property
    def budget(self) -> str:
        if self.max_retries == 0:
            return "its one attempt (WEBHOOK_MAX_RETRIES is 0)"
        retries = "retry" if self.max_retries == 1 else "retries"
        return f"its first attempt and {self.max_retries} {retries} (WEBHOOK_MAX_RETRIES)"


def label_dead_letters(app: Flask, queue: str, max_retries: int) -> None:
    """rq-dashboard's pages get `dead_letters` (the jobs page's edit reads it)."""
    shown = DeadLetterList(queue, max_retries)
    app.context_processor(lambda: {"dead_letters": shown})


class TemplateEditMissing(RuntimeError):
    """An rq-dashboard template no longer has what an edit anchors on."""


def edit_template(name: str, source: str) -> str:
    for template, pattern, replacement in TEMPLATE_EDITS:
        if template == name:
            source, count = re.subn(pattern, replacement, source)
            if count != 1:
                raise TemplateEditMissing(f"{name}: {pattern!r} matched {count} times")
    return source


def readable_metadata(meta: dict[str, Any]) -> str:
    """A job's meta as lines of `name: value`, an event's in the order an operator reads."""
    try:
        event = JobMeta.from_meta(meta)
    except UnreadableJob:  # a job enqueued by something else than the receiver
        return "\n".join(
            f"{key}: {json.dumps(value, default=str)}" for key, value in sorted(meta.items())
        )
    rows: list[tuple[str, object]] = [
        ("source", event.source),
        ("type", event.type or "-"),
        ("event id", event.event_id),
        ("status", event.state),
        ("attempts", f"{event.attempts} (retries granted: {event.budget})"),
        ("requeued", f"{event.requeues} time(s)"),
        ("last error", event.last_error or "-"),
        ("handlers", "; ".join(f"{n}: {s}" for n, s in event.handler_states.items()) or "-"),
        ("last attempt", "; ".join(_turn(t) for t in event.attempt_turns) or "-"),
        ("received at", iso(event.received_at) or "-"),
        ("dead at", iso(event.dead_at) or "-"),
        ("settled at", iso(event.settled_at) or "-"),
    ]
    if event.permanent:
        rows.append(("permanent", "yes: PermanentError, not retried"))
    if event.duplicate:
        rows.append(("duplicate", "yes: enqueued by the log-only dedupe mode"))
    rows += [(key, json.dumps(value, default=str)) for key, value in sorted(event.extra.items())]
    width = max(len(name) for name, _ in rows) + 1
    return "\n".join(f"{name + ':':<{width}} {value}" for name, value in rows)


def _turn(turn: Turn) -> str:
    """`name: state`, and the error of a failed one: `name: failed (ValueError: ...)`."""
    return f"{turn.handler}: {turn.state}" + (f" ({turn.error})" if turn.error else "")


def readable_job_info(app: Flask) -> None:
    """The job data the job page renders, with its metadata made readable."""
    endpoint = "rq_dashboard.job_info"
    original = app.view_functions[endpoint]

    def job_info(*args: Any, **kwargs: Any) -> Any:
        answer = original(*args, **kwargs)
        response, headers = (answer[0], answer[1]) if isinstance(answer, tuple) else (answer, {})
        data = response.get_json(silent=True) if isinstance(response, Response) else None
        if not isinstance(data, dict) or not isinstance(data.get("metadata"), str):
            return answer
        try:
            meta = json.loads(data["metadata"])
        except ValueError:
            return answer
        if isinstance(meta, dict):
            data["metadata"] = readable_metadata(meta)
        return jsonify(data), headers

    app.view_functions[endpoint] = job_info

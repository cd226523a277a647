"""The Events page's templates and stylesheet, kept in Python so they ship with the package.

Jinja autoescapes every value; nothing here marks data safe. There is no script at all,
so the page's Content-Security-Policy can forbid scripts outright. The layout is
rq-dashboard's: its navbar's markup, its stylesheet, its `container` and `section` card,
so the page reads as one of its own; what differs without script is in `layout.py`.
"""

from __future__ import annotations

from flask import url_for
from jinja2 import DictLoader, Environment, StrictUndefined

from workers.ops.events_page.chart_template import CHART, CHART_CSS
from workers.ops.events_page.layout import page_layout
from workers.ops.events_page.search_template import SEARCH, SEARCH_CSS

LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="initial-scale=1.0">
{% if layout.autorefresh.on %}<meta http-equiv="refresh" content="{{ layout.autorefresh.seconds }}">
{% endif %}<title>{% block title %}Events{% endblock %} - RQ dashboard</title>
<link rel="stylesheet"
 href="{{ url_for('rq_dashboard.static', filename='css/bootstrap.min.css') }}">
<link rel="stylesheet" href="{{ url_for('rq_dashboard.static', filename='css/main.css') }}">
<link rel="stylesheet" href="{{ url_for('events.stylesheet') }}">
</head><body>
{#- rq-dashboard's navbar.html, without its script: the menu never collapses behind a toggler
 that would need one, the switch is a link, and the instance list leads to rq-dashboard. #}
<div id="navbar-dashboard" class="navbar navbar-expand-lg navbar-light">
 <a class="navbar-brand">RQ-dashboard</a>
 <div class="collapse navbar-collapse show" id="navbarSupportedContent">
  <ul class="navbar-nav mr-auto">
   <li class="nav-item"><a href="{{ layout.view('queues') }}" class="nav-link">Queues</a></li>
   <li class="nav-item"><a href="{{ layout.view('jobs') }}" class="nav-link">Jobs</a></li>
   <li class="nav-item"><a href="{{ layout.view('workers') }}" class="nav-link">Workers</a></li>
   <li class="nav-item active"><a href="{{ url_for('events.index') }}" class="nav-link"
    aria-current="page">Events</a></li>
  </ul>
  {% set refresh = layout.autorefresh %}
  <div><a id="autorefresh-switch" href="{{ refresh.toggle }}"
   class="custom-control custom-switch{% if refresh.on %} on{% endif %}" role="switch"
   aria-checked="{{ 'true' if refresh.on else 'false' }}"
   title="{{ 'On' if refresh.on else 'Off' }}: click to turn it {{ 'off' if refresh.on else 'on'
   }}"><span class="custom-control-label"><p id="autorefresh-intro">Autorefresh
   <span class="period">every {{ refresh.seconds }} s</span></p></span></a></div>
  <div id="rq-instances-row">
  {% if layout.instances|length == 1 %}
   <select disabled id="rq-instances" title="Redis instance">
    {% for i in layout.instances %}<option selected>[{{ i.number }}] {{ i.where }}</option>
    {% endfor %}</select>
  {% else %}
   <ul id="rq-instances" class="nav">{% for i in layout.instances %}
    <li class="nav-item"><a class="nav-link" href="{{ layout.view('queues', i.number) }}"
     >[{{ i.number }}] {{ i.where }}</a></li>{% endfor %}
   </ul>
  {% endif %}
  </div>
 </div>
</div>
<div class="container"><div class="section">
{% block content %}{% endblock %}
</div></div>
</body></html>
"""

INDEX = """{% extends "layout.html" %}
{% block content %}
<h1>Events</h1>
{#- A bulk action's result first: the page it lands on is long (the chart, the search), and
 the search it came from no longer shows the events a requeue put back. #}
{% if bulk_done %}<div id="bulk-result" class="alert alert-info py-1 mt-2" role="status">
 <div id="bulk-done">{{ bulk_done.sentence }}</div>
 {% if bulk_done.requeued %}<a id="bulk-requeued" href="{{ bulk_done.requeued }}">Show the {{
  bulk_done.count }} requeued event{{ "" if bulk_done.count == 1 else "s" }} &rarr;</a>{% endif %}
</div>{% endif %}
<p class="intro">What the receiver accepted, from the event ledger: what is waiting now, the
 recent past per source, and a search.
 {% if layout.autorefresh.on %}This page reloads every {{ layout.autorefresh.seconds }} s
 (Autorefresh, above): what you type in the search is lost at a reload.
 {%- else %}Autorefresh is off here until you turn it on: a reload would lose what you type
 in the search.{% endif %}</p>
<section id="now" class="mb-3">
 <span class="stat"><b>{{ now.queued }}</b> queued</span>
 <span class="stat">oldest queued: <b>{{ age }}</b></span>
 <span class="stat"><b>{{ now.scheduled }}</b> waiting for a retry</span>
 <span class="stat"><b>{{ now.dead }}</b> dead letter{{ "" if now.dead == 1 else "s" }}</span>
</section>
{% include "chart.html" %}
{% if shard is not none %}<p id="shard-note" class="chart-key">This is shard {{ shard }}'s page:
 its chart counts what this shard's workers did{% if shard == 0 %}, and what every receiver
 answered (kept in this shard){% endif %}. The Events page of every shard, on the dashboard's
 front (its /events), adds every shard's up, and searches and acts on all of them.</p>{% endif %}
{% include "search.html" %}
{% endblock %}
"""

EVENT = """{% extends "layout.html" %}
{% block title %}{{ d.record.source }} {{ d.record.id }}{% endblock %}
{% block content %}
<p><a href="{{ url_for('events.index') }}">&larr; Events</a></p>
<h1 class="h2">{{ d.record.source }} event <code id="event-id">{{ d.record.id }}</code></h1>
{% if message %}<div id="done" class="alert alert-info py-1">{{ message }}</div>{% endif %}
{% if pending %}<p id="pending" class="intro">Not settled yet{% if layout.autorefresh.on
 %}: this page reloads every {{ layout.autorefresh.seconds }} s until it is{% endif %}.</p>
{% endif %}
<dl class="row" id="record">
 <dt class="col-sm-2">status</dt>
 <dd class="col-sm-10">
  <span class="status status-{{ d.record.status }}">{{ d.record.status }}</span></dd>
 <dt class="col-sm-2">type</dt><dd class="col-sm-10">{{ d.record.type or "-" }}</dd>
 <dt class="col-sm-2">attempts</dt><dd class="col-sm-10">{{ d.record.attempts }}</dd>
 <dt class="col-sm-2">last error</dt><dd
  class="col-sm-10 error">{{ d.record.last_error or "-" }}</dd>
 <dt class="col-sm-2">received</dt><dd class="col-sm-10">{{ received }}</dd>
 <dt class="col-sm-2">settled</dt><dd class="col-sm-10" id="settled">{{ settled }}</dd>
 <dt class="col-sm-2">job</dt><dd class="col-sm-10">
 {% if d.job_status %}
  <a id="job-link"
   href="{{ url_for('rq_dashboard.job_view', instance_number=0, job_id=d.record.job_id) }}"
  >{{ d.record.job_id }}</a> ({{ d.job_status }}, in rq-dashboard)
 {% else %}{{ d.record.job_id }} (RQ no longer keeps it){% endif %}</dd>
</dl>
<div class="actions mb-3">
 {% if d.dead_letter %}
 <form method="post" action="{{ url_for('events.requeue') }}" class="d-inline">
  <input type="hidden" name="source" value="{{ d.record.source }}"><input type="hidden" name="id"
   value="{{ d.record.id }}">
  <button id="requeue" type="submit" name="handlers" value="failed"
   class="btn btn-sm btn-warning"
   title="Full retry budget; the handlers that succeeded do not run again."
   >Requeue failed handlers</button>
  <button id="requeue-all" type="submit" name="handlers" value="all"
   class="btn btn-sm btn-outline-warning"
   title="Full retry budget; every handler runs again.">Requeue, all handlers</button>
 </form>
 {% endif %}
 {% if not pending %}
 <form method="post" action="{{ url_for('events.replay') }}" class="d-inline">
  <input type="hidden" name="source" value="{{ d.record.source }}"><input type="hidden" name="id"
   value="{{ d.record.id }}">
  <button id="replay" type="submit" name="handlers" value="failed"
   class="btn btn-sm btn-outline-secondary"
   title="The handlers that have not succeeded run again.">Replay</button>
  <button id="replay-all" type="submit" name="handlers" value="all"
   class="btn btn-sm btn-outline-secondary"
   title="Every handler runs again.">Replay, all handlers</button>
 </form>
 {% endif %}
</div>
<h2 class="h5">Headers</h2>
{% if d.headers %}<table id="headers" class="table table-sm"><tbody>
 {% for name, value in d.headers.items() %}
 <tr><th>{{ name }}</th><td>{{ value }}</td></tr>{% endfor %}
</tbody></table>{% elif d.job_status %}<p>none kept for this provider</p>{% else %}<p>not kept: RQ
 no longer has the job</p>{% endif %}
<h2 class="h5">Payload <small>({{ d.payload.kind }}, {{ d.payload.size }}
 bytes{% if d.payload.cut %}, the start shown{% endif %})</small></h2>
<pre id="payload" class="payload">{{ d.payload.text }}</pre>
<h2 class="h5">Handlers <small>(where each stands after the last attempt)</small></h2>
{% if d.handlers %}<table id="handlers" class="table table-sm w-auto"><tbody>
 {% for name, state in d.handlers %}<tr><td class="handler">{{ name }}</td><td><span
  class="state state-{{ state }}">{{ state }}</span></td></tr>{% endfor %}
</tbody></table>{% else %}<p>No handler has run for this event.</p>{% endif %}
<h2 class="h5">Attempts</h2>
{% if d.note %}<p id="attempts-note">{{ d.note }}</p>{% endif %}
{% if d.turns %}<table id="attempts" class="table table-sm">
 <thead><tr><th>attempt</th><th>ended (UTC)</th><th>handler</th><th>state</th><th>error</th>
 </tr></thead><tbody>
 {% for t in d.turns %}{% if t.marker %}<tr class="rerun{% if not t.recorded %} unrecorded{%
  endif %}"><td colspan="5">&#8635; {{ t.text }}</td></tr>
 {% else %}<tr><td>{{ t.attempt }}</td><td class="time">{{ t.ended }}</td><td
  class="handler">{{ t.handler }}</td><td><span class="state state-{{ t.state }}">{{ t.state
  }}</span></td><td class="error">{{ t.error }}</td></tr>{% endif %}{% endfor %}
</tbody></table>{% elif d.rq_attempts %}<table id="attempts" class="table table-sm">
 <thead><tr><th>when (UTC)</th><th>outcome</th><th>error</th></tr></thead><tbody>
 {% for a in d.rq_attempts %}<tr><td class="time">{{ a.when }}</td><td>{{ a.outcome }}</td><td
  class="error">{{ a.error }}</td></tr>{% endfor %}
</tbody></table>{% else %}<p>{{ d.record.attempts }} attempt(s); RQ keeps no details of them
 now.</p>{% endif %}
{% if d.traceback and d.traceback.user %}<h2 class="h5">Last traceback <small>(your code's
 frames)</small></h2>
<pre id="traceback-user" class="traceback">{{ d.traceback.user }}</pre>
<details><summary>full traceback</summary><pre id="traceback" class="traceback">{{
 d.traceback.full }}</pre></details>
{% elif d.traceback %}<details><summary>last traceback</summary><pre id="traceback"
 class="traceback">{{ d.traceback.full }}</pre></details>{% endif %}
{% endblock %}
"""

STYLESHEET = (
    """
/* rq-dashboard's switch is a checkbox its script watches; here it is a link, drawn alike. */
#autorefresh-switch, #autorefresh-switch:hover { text-decoration: none; }
#autorefresh-switch.on .custom-control-label::before { border-color: #007bff;
 background-color: #007bff; }
#autorefresh-switch.on .custom-control-label::after { background-color: #fff;
 transform: translateX(.75rem); }
#autorefresh-switch .period { font-size: 85%; }
#rq-instances.nav .nav-link { padding: .25rem .5rem; }
.section h1 { margin-bottom: 0; }
.stat { margin-right: 1.5rem; }
code, dd.error, td.handler { word-break: break-all; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
pre.payload, pre.traceback { background: #f7fafc; padding: .5rem; max-height: 32rem;
 overflow: auto; white-space: pre-wrap; word-break: break-all; }
.status { padding: 0 .35rem; border-radius: .2rem; background: #e2e8f0; }
.status-dead { background: #fed7d7; color: #9b2c2c; }
.status-done { background: #c6f6d5; color: #22543d; }
.status-retrying, .status-running, .status-queued { background: #fefcbf; color: #744210; }
.state-failed, .state-permanent { color: #9b2c2c; }
.state-done { color: #22543d; }
/* A requeue or a replay between two attempts: a band across the table, not an attempt. */
tr.rerun td { background: #ebf8ff; color: #2a4365; font-style: italic; }
"""
    + CHART_CSS
    + SEARCH_CSS
)

environment = Environment(
    loader=DictLoader(
        {
            "layout.html": LAYOUT,
            "index.html": INDEX,
            "chart.html": CHART,
            "search.html": SEARCH,
            "event.html": EVENT,
        }
    ),
    autoescape=True,
    undefined=StrictUndefined,
)
environment.globals["url_for"] = url_for


def render(name: str, **context: object) -> str:
    """A page; its layout (navbar, autorefresh) as `page_layout` makes it unless given:
    autorefresh off unless asked, which suits a page with a form."""
    context.setdefault("layout", page_layout(default_on=False))
    return environment.get_template(name).render(**context)

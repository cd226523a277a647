"""The bulk actions' confirmation page, and their buttons under a search."""

# Under the results table: links (GET) to the confirmation, which changes nothing.
BULK_BUTTONS = """{% if bulk %}<div id="bulk" class="mb-2">
 {{ bulk.count }}{% if bulk.partial %} or more{% endif %} dead letter{{ "" if bulk.count == 1
 else "s" }} match{{ "es" if bulk.count == 1 else "" }} this search, on every page:
 <a id="bulk-requeue" class="btn btn-sm btn-warning" href="{{ bulk.requeue }}">Requeue these
  {{ bulk.count }}</a>
 <a id="bulk-purge" class="btn btn-sm btn-outline-danger" href="{{ bulk.purge }}">Purge these
  {{ bulk.count }}</a>
</div>{% endif %}"""

CONFIRM = """{% extends "layout.html" %}
{% block title %}{{ verb | capitalize }} dead letters{% endblock %}
{% block content %}
<p><a href="{{ back }}">&larr; the search</a></p>
<h1 class="h4">{{ verb | capitalize }} the dead letters of this search</h1>
{% for error in errors %}<div class="alert alert-warning py-1">{{ error }}</div>{% endfor %}
<dl class="row" id="filters">
 {% for name, value in filters %}<dt class="col-sm-2">{{ name }}</dt><dd
  class="col-sm-10"><code>{{ value }}</code></dd>{% else %}<dt class="col-sm-2">filters</dt>
 <dd class="col-sm-10">none: every dead letter</dd>{% endfor %}
</dl>
{% if not errors %}
<p id="count">{{ count }} dead letter{{ " matches" if count == 1 else "s match" }} this search{% if
 partial %} among the {{ scanned }} that failed most recently (of {{ total }}){% endif
 %}.{% if listed < count %} This acts on the {{ listed }} that failed most recently; open this
 page again afterwards for the rest.{% endif %} Nothing has changed yet.</p>
{% if groups %}
<table id="groups" class="table table-sm">
 <thead><tr><th>count</th><th>error</th><th>sources</th><th>types</th><th>first failed</th>
  <th>last failed</th></tr></thead>
 <tbody>
 {% for g in groups %}<tr><td>{{ g.count }}</td><td class="error"><span class="clip"
  title="{{ g.error }}">{{ g.error or "-" }}</span></td><td>{{ g.sources | join(", ") }}</td><td
  class="types">{{ g.types | join(", ") or "-" }}</td>
  <td class="time">{% if g.first_failed %}<time datetime="{{ g.first_failed.exact }}"
   title="{{ g.first_failed.exact }}">{{ g.first_failed.text }}</time>{% endif %}</td>
  <td class="time">{% if g.last_failed %}<time datetime="{{ g.last_failed.exact }}"
   title="{{ g.last_failed.exact }}">{{ g.last_failed.text }}</time>{% endif %}</td></tr>
 {% endfor %}
 </tbody>
</table>
<form method="post" action="{{ action }}" class="mb-3">
 {% for name, value in hidden %}<input type="hidden" name="{{ name }}" value="{{ value }}">
 {% endfor %}<input type="hidden" name="jobs" value="{{ jobs }}">
 {% if verb == "requeue" %}
 <p>Each goes back on the queue with its full retry budget.</p>
 <button id="confirm" type="submit" name="handlers" value="failed" class="btn btn-warning"
  >Requeue {{ listed }}, failed handlers</button>
 <button id="confirm-all" type="submit" name="handlers" value="all"
  class="btn btn-outline-warning">Requeue {{ listed }}, all handlers</button>
 <p class="small mt-1">Failed handlers: only the handlers that have not succeeded for each
  event run again. All handlers: every one, those that succeeded too.</p>
 {% else %}
 <p id="claimed">Each is deleted for good. Its event id stays claimed until the dedupe TTL
  (WEBHOOK_DEDUPE_TTL) ends: the same event sent again is still answered as a duplicate and
  does not run.</p>
 <button id="confirm" type="submit" class="btn btn-danger">Purge {{ listed }}</button>
 {% endif %}
</form>
{% endif %}
{% endif %}
{% endblock %}
"""

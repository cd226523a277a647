"""The Events page's search form and results table: its template and styles.

Each field has its label above it, so no placeholder has to say what the field is (and be
cut off); times are relative with the exact UTC time on hover; ids and errors stay on one
line, ellipsized when long, whole in their `title` (and on the event's page).
"""

from workers.ops.events_page.bulk_template import BULK_BUTTONS

SEARCH = (
    """<section id="search">
 <h2 class="h5">Search</h2>
 <form method="get" action="{{ url_for('events.index') }}" class="search mb-2">
  <div class="field"><label for="f-source">source</label>
  <select id="f-source" name="source" class="form-control form-control-sm">
   <option value="">every source</option>
   {% for name in sources %}<option value="{{ name }}"{% if form.source == name %}
    selected{% endif %}>{{ name }}</option>{% endfor %}
  </select></div>
  <div class="field"><label for="f-id">event id</label>
  <input id="f-id" name="id" value="{{ form.id }}" placeholder="evt_123" size="24"
   class="form-control form-control-sm"></div>
  <div class="field"><label for="f-type">type</label>
  <input id="f-type" name="type" value="{{ form.type }}" placeholder="invoice.* for a prefix"
   size="22" class="form-control form-control-sm"></div>
  <div class="field"><label for="f-status">status</label>
  <select id="f-status" name="status" class="form-control form-control-sm">
   <option value="">any status</option>
   {% for name in statuses %}<option value="{{ name }}"{% if form.status == name or (name ==
    "dead" and form.status == "failed") %} selected{% endif %}>{{ name }}</option>{% endfor %}
  </select></div>
  <div class="field"><label for="f-since">received since (UTC)</label>
  <input id="f-since" name="since" value="{{ form.since }}" placeholder="2026-12-01T08:00"
   size="20" class="form-control form-control-sm"></div>
  <div class="field"><label for="f-until">until</label>
  <input id="f-until" name="until" value="{{ form.until }}" placeholder="ISO 8601 or unix s"
   size="20" class="form-control form-control-sm"></div>
  <div class="field"><label for="f-limit">per page</label>
  <select id="f-limit" name="limit" class="form-control form-control-sm">
   {% for n in limits %}<option value="{{ n }}"{% if n == page_size %} selected{% endif
    %}>{{ n }}</option>{% endfor %}
  </select></div>
  {% if form.requeued %}<input type="hidden" name="requeued" value="{{ form.requeued }}">
  {% endif %}
  <div class="field"><button type="submit" class="btn btn-sm btn-primary">Search</button></div>
 </form>
 <p class="ranges">Received in the last:
  {% for label, href in ranges %}<a href="{{ href }}">{{ label }}</a>{% if not loop.last %}
   &middot; {% endif %}{% endfor %}</p>
 {% for error in errors %}<div class="alert alert-warning py-1">{{ error }}</div>{% endfor %}
 {% if requeued %}<p id="requeued-only">Only the {{ requeued }} event{{ "" if requeued == 1
  else "s" }} that one bulk requeue put back on the queue, whatever they became since.
  <a href="{{ url_for('events.index') }}">Every event</a></p>{% endif %}
 <p id="summary">{{ summary }}</p>
"""
    + BULK_BUTTONS
    + """
 {% if rows %}
 <table id="events" class="table table-sm table-striped">
  <thead><tr><th>received</th><th>source</th><th>event id</th><th>type</th>
   <th>status</th><th>tries</th><th>last error</th><th>settled</th></tr></thead>
  <tbody>
  {% for r in rows %}
   <tr><td class="time">{% if r.received %}<time datetime="{{ r.received.exact }}"
    title="{{ r.received.exact }}">{{ r.received.text }}</time>{% else %}-{% endif %}</td>
    <td>{{ r.source }}</td>
    <td class="id"><a href="{{ url_for('events.event', source=r.source, id=r.id) }}"
     class="clip" title="{{ r.id }}">{{ r.id }}</a></td>
    <td class="type"><span class="clip" title="{{ r.type }}">{{ r.type or "-" }}</span></td>
    <td><span class="status status-{{ r.status }}">{{ r.status }}</span></td>
    <td>{{ r.attempts }}</td>
    <td class="error">{% if r.error %}<span class="clip" title="{{ r.error }}">{{ r.error
     }}</span>{% endif %}</td>
    <td class="time">{% if r.settled %}<time datetime="{{ r.settled.exact }}"
     title="{{ r.settled.exact }}">{{ r.settled.text }}</time>{% else %}-{% endif %}</td></tr>
  {% endfor %}
  </tbody>
 </table>
 {% endif %}
 <p class="pager">{% if form.after %}<a href="{{ newest }}">&larr; newest</a>{% endif %}
  {% if older %}<a id="older" href="{{ older }}">older &rarr;</a>{% endif %}</p>
</section>
"""
)

SEARCH_CSS = """
form.search { display: flex; flex-wrap: wrap; align-items: flex-end; }
form.search .field { margin: 0 .5rem .5rem 0; }
form.search label { display: block; margin-bottom: .1rem; font-size: .8rem; color: #4a5568; }
form.search input.form-control { width: auto; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
/* One line each, never broken inside a word: long ones end in an ellipsis, whole on hover. */
.clip { display: inline-block; max-width: 100%; overflow: hidden; text-overflow: ellipsis;
 white-space: nowrap; vertical-align: bottom; }
td.id .clip { max-width: 16rem; }
td.type .clip { max-width: 12rem; }
td.error .clip { max-width: 28rem; }
time[title] { cursor: help; }
"""

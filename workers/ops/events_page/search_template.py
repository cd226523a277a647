"""The Events page's search form and results table: its template and styles."""

SEARCH = """<section id="search">
 <h2 class="h5">Search</h2>
 <form method="get" action="{{ url_for('events.index') }}" class="form-inline mb-2">
  <select name="source" class="form-control form-control-sm mr-1" aria-label="source">
   <option value="">every source</option>
   {% for name in sources %}<option value="{{ name }}"{% if form.source == name %}
    selected{% endif %}>{{ name }}</option>{% endfor %}
  </select>
  <input name="id" value="{{ form.id }}" placeholder="event id"
   class="form-control form-control-sm mr-1" aria-label="event id">
  <input name="type" value="{{ form.type }}" placeholder="type (invoice.* for a prefix)"
   class="form-control form-control-sm mr-1" aria-label="type">
  <select name="status" class="form-control form-control-sm mr-1" aria-label="status">
   <option value="">any status</option>
   {% for name in statuses %}<option value="{{ name }}"{% if form.status == name %}
    selected{% endif %}>{{ name }}</option>{% endfor %}
  </select>
  <input name="since" value="{{ form.since }}" placeholder="since (ISO 8601 UTC or unix)"
   class="form-control form-control-sm mr-1" aria-label="since">
  <input name="until" value="{{ form.until }}" placeholder="until"
   class="form-control form-control-sm mr-1" aria-label="until">
  <button type="submit" class="btn btn-sm btn-primary">Search</button>
 </form>
 <p class="ranges">Received in the last:
  {% for label, href in ranges %}<a href="{{ href }}">{{ label }}</a>{% if not loop.last %}
   &middot; {% endif %}{% endfor %}</p>
 {% for error in errors %}<div class="alert alert-warning py-1">{{ error }}</div>{% endfor %}
 <p id="summary">{{ summary }}</p>
 {% if rows %}
 <table id="events" class="table table-sm table-striped">
  <thead><tr><th>received (UTC)</th><th>source</th><th>event id</th><th>type</th>
   <th>status</th><th>tries</th><th>last error</th><th>settled (UTC)</th></tr></thead>
  <tbody>
  {% for r in rows %}
   <tr><td class="time">{{ r.received }}</td><td>{{ r.source }}</td>
    <td class="id"><a
     href="{{ url_for('events.event', source=r.source, id=r.id) }}">{{ r.id }}</a></td>
    <td>{{ r.type or "-" }}</td>
    <td><span class="status status-{{ r.status }}">{{ r.status }}</span></td>
    <td>{{ r.attempts }}</td><td class="error">{{ r.error }}</td><td
     class="time">{{ r.settled or "-" }}</td></tr>
  {% endfor %}
  </tbody>
 </table>
 {% endif %}
 <p class="pager">{% if form.after %}<a href="{{ newest }}">&larr; newest</a>{% endif %}
  {% if older %}<a id="older" href="{{ older }}">older &rarr;</a>{% endif %}</p>
</section>
"""

SEARCH_CSS = """
td.id, td.error { word-break: break-all; }
td.error { max-width: 28rem; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
"""

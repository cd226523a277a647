"""The Events page's chart of recent deliveries per source: its template and styles.

Inline SVG drawn from `chart.py`'s geometry, with no script (the page's CSP forbids any).
"""

CHART = """<section id="day" class="mb-4">
 <h2 class="h5">Last 24 hours, per 15 minutes (UTC)</h2>
 {% for source in chart.sources %}
 <div class="source-day">
  <h3 class="h6">{{ source.source }}</h3>
  <table class="day">
  {% for row in source.rows %}
   <tr class="series-{{ row.name }}"><th>{{ row.name }}</th><td class="total">{{ row.total }}</td>
   <td><svg class="bars" width="{{ chart.width }}" height="{{ chart.height }}"
    viewBox="0 0 {{ chart.width }} {{ chart.height }}" role="img"
     aria-label="{{ row.name }} per 15 minutes, {{ row.total }} in 24 hours">
    <line x1="0" y1="{{ chart.height - 0.5 }}" x2="{{ chart.width }}"
     y2="{{ chart.height - 0.5 }}" stroke="#cbd5e0" stroke-width="1"/>
    {% for bar in row.bars %}<rect x="{{ bar.x }}" y="{{ bar.y }}" width="5"
     height="{{ bar.height }}"
      fill="{{ row.color }}"><title>{{ bar.title }}</title></rect>{% endfor %}
   </svg></td><td class="peak">{% if row.peak %}peak {{ row.peak }}{% endif %}</td></tr>
  {% endfor %}
   <tr class="axis"><th></th><td></td><td><svg width="{{ chart.width }}" height="14"
    viewBox="0 0 {{ chart.width }} 14">
    {% for tick in chart.ticks %}<text x="{{ tick.x }}" y="11" font-size="10"
     fill="#4a5568">{{ tick.label }}</text>{% endfor %}
   </svg></td><td></td></tr>
  </table>
 </div>
 {% endfor %}
</section>
"""

CHART_CSS = """
.source-day { margin-bottom: .75rem; }
table.day th { font-weight: normal; width: 6rem; padding-right: .5rem; }
table.day td.total { text-align: right; width: 4rem; padding-right: .75rem; font-variant-numeric:
 tabular-nums; }
table.day td.peak { color: #718096; font-size: .8rem; padding-left: .5rem; }
svg.bars { background: #f7fafc; display: block; }
"""

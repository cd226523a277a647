"""The Events page's chart of recent deliveries per source: its template and styles.

Inline SVG drawn from `chart.py`'s geometry, with no script (the page's CSP forbids any, and
inline styles too: colours are presentation attributes in the SVG and classes here). Each
source's SVG is an image to a screen reader, named by its <title> and summed up (every
series' total) by its <desc>; each bar has a <title> that hovering shows.
"""

from workers.ops.events_page.chart import COLORS, GRID, INK, PANEL

CHART = (
    """<section id="day" class="mb-4">
 <h2 class="h5">{{ chart.heading }}</h2>
 <nav class="ranges" aria-label="Chart range">Range:
 {% for link in chart_links %}<a href="{{ link.url }}"
  {% if link.current %}class="current" aria-current="page"{% endif %}>{{ link.label }}</a>
 {% endfor %}</nav>
 <p class="chart-key"><b>Received</b>: <i>accepted</i>, new events taken in; <i>duplicate</i>,
  an event delivered again (answered, not run again); <i>rejected</i>, refused (signature, age,
  format). <b>Worked</b>: <i>done</i>, handled (done, ignored or stale); <i>retried</i>, an
  attempt that failed and will run again; <i>dead-lettered</i>, an event sent to the dead
  letters (one requeued that fails again counts twice: the dead letters there are now are
  counted above).</p>
 {% for source in chart.sources %}{% set n = loop.index %}
 <div class="source-chart">
  <h3 class="h6">{{ source.source }}</h3>
  <div class="chart-row">
  <svg class="chart" width="{{ chart.width }}" height="{{ chart.height }}"
   viewBox="0 0 {{ chart.width }} {{ chart.height }}" role="img"
   aria-labelledby="chart-{{ n }}-title chart-{{ n }}-desc">
   <title id="chart-{{ n }}-title">{{ source.title }}</title>
   <desc id="chart-{{ n }}-desc">{{ source.desc }}</desc>
   {% for panel in source.panels %}
   <text x="{{ chart.left }}" y="{{ panel.top - 7 }}" font-size="13" font-weight="bold"
    fill="@INK@">{{ panel.name }}</text>
   {% for line in panel.gridlines %}<line x1="{{ chart.left }}" x2="{{ chart.right }}"
    y1="{{ line.y }}" y2="{{ line.y }}" stroke="@GRID@" stroke-width="1"/><text
    x="{{ chart.left - 6 }}" y="{{ line.y + 4 }}" text-anchor="end" font-size="12"
    fill="@INK@">{{ line.label }}</text>{% endfor %}
   {% for path in panel.paths %}<path fill="{{ path.color }}" transform="scale(.1)"
    d="{{ path.d }}"/>
   {% endfor %}{% for bar in panel.bars %}<rect x="{{ bar.x }}" y="{{ panel.top }}"
    width="{{ bar.width }}" height="@PANEL@" fill-opacity="0"><title>{{ bar.title
    }}</title></rect>{% endfor %}
   {% endfor %}
   {% for tick in chart.ticks %}<text x="{{ tick.x }}" y="{{ chart.axis_y }}"
    text-anchor="middle" font-size="12" fill="@INK@">{{ tick.label }}</text>{% endfor %}
   {% if not source.total %}<text x="{{ (chart.left + chart.right) / 2 }}" y="60"
    text-anchor="middle" font-size="13" fill="@INK@">nothing in this range</text>{% endif %}
  </svg>
  <table class="legend">
  {% for panel, entries in source.legend %}
   <tr class="legend-panel"><th colspan="2">{{ panel }}</th></tr>
   {% for e in entries %}<tr class="series-{{ e.name }}"><th><span
    class="swatch swatch-{{ e.name }}"></span>{{ e.label }}</th><td
    class="total">{{ e.total }}</td></tr>
   {% endfor %}{% endfor %}
  </table>
  </div>
 </div>
 {% endfor %}
</section>
""".replace("@INK@", INK)
    .replace("@GRID@", GRID)
    .replace("@PANEL@", str(PANEL))
)

CHART_CSS = """
.ranges a { margin: 0 .35rem; }
.ranges a.current { font-weight: bold; color: #1a202c; text-decoration: underline; }
.chart-key { max-width: 60rem; font-size: .9rem; }
.source-chart { margin-bottom: 1rem; }
.chart-row { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 1rem; }
svg.chart { display: block; max-width: 100%; height: auto; }
table.legend th { font-weight: normal; padding-right: .75rem; white-space: nowrap; }
table.legend tr.legend-panel th { font-weight: bold; padding-top: .4rem; }
table.legend td.total { text-align: right; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .4rem;
 vertical-align: -.05rem; }
""" + "".join(f".swatch-{name} {{ background: {color}; }}\n" for name, color in COLORS.items())

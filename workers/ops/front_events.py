"""The Events page of every shard, on the dashboard's front: what is waiting now, the chart
of the recent past per source, the search, and the bulk actions on the dead letters it
matches, each over every shard (`front_picture.py`, `front_search.py`, `front_bulk.py`).

Read at once, each over the shards at once: one slow shard costs its own time, not the sum.
A shard that does not answer is named where its part is missing, and the rest is shown.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

from flask import Response
from markupsafe import escape
from werkzeug.datastructures import MultiDict

from app.settings import Settings
from app.shards import Shards
from workers.ops import front_bulk, front_bulk_pages
from workers.ops.events_page.chart import draw
from workers.ops.events_page.chart_range import chosen, links
from workers.ops.events_page.chart_template import CHART
from workers.ops.events_page.moments import waited
from workers.ops.events_page.search_form import carried, form_of, parse_query
from workers.ops.events_page.templates import environment
from workers.ops.front_pages import page
from workers.ops.front_picture import Picture, read_picture
from workers.ops.front_search import results

_chart = environment.from_string(CHART)


def events_page(settings: Settings, shards: Shards, args: MultiDict[str, str]) -> Response:
    query, errors = parse_query(args, list(settings.sources))
    if query.requeued:
        errors.append(front_bulk.REQUEUED_ON_SHARD)
    now = time.time()
    with ThreadPoolExecutor(max_workers=3) as pool:
        picture = pool.submit(read_picture, settings, shards, now, chosen(args.get("range")))
        search = pool.submit(results, settings, shards, args, query, errors)
        bulk = pool.submit(front_bulk_pages.buttons, settings, shards, args)
        body = (
            front_bulk_pages.banner(shards, args)
            + _picture(picture.result(), args)
            + "<h2>Search</h2>"
            + search.result()
            + bulk.result()
        )
    return page("Events in every shard", body, 400 if errors else 200, styled=True)


def _picture(picture: Picture, args: MultiDict[str, str]) -> str:
    html = ""
    if picture.down:
        said = "".join(f"<li>shard {shard}: {escape(line)}</li>" for shard, line in picture.down)
        html += f"<p>Not counted (did not answer):</p><ul id='picture-down'>{said}</ul>"
    if picture.timeline is None:  # no shard answered: no figure to show, not zeros
        return html
    q = picture.queue
    html = (
        '<p id="now">'
        f'<span class="stat"><b>{q.queued}</b> queued</span> '
        f'<span class="stat">oldest queued: <b>{waited(q.oldest_age)}</b></span> '
        f'<span class="stat"><b>{q.scheduled}</b> waiting for a retry</span> '
        f'<span class="stat"><b>{q.dead}</b> dead letter{"" if q.dead == 1 else "s"}</span> '
        "(every shard that answered)</p>"
    ) + html
    chart = draw(picture.timeline)
    kept = carried(form_of(args))
    chosen_links = links(
        chart.span,
        chart.auto,
        lambda choice: "/events?" + urlencode({**kept, "range": choice}) + "#day",
    )
    return html + _chart.render(chart=chart, chart_links=chosen_links)

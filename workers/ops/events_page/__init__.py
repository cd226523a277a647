"""The dashboard's Events page (`/events`): did we get evt_123, and what became of it.

Search the ledger by source, event id, type, status and time; open an event (headers,
payload, where each handler stands, each handler's turn at each attempt, its job in
rq-dashboard); requeue or replay it as the command does, for the handlers that have not
succeeded or for all; and see the last day per source with the queue right now. `views.py`
holds the routes (`events_blueprint`, `ACTIONS`).

This package's `__init__` imports nothing: `webhooks events` uses `search.py` and must not
load Flask, Jinja2 and rq-dashboard with it (importing a module of a package runs the
package's `__init__` first).
"""

"""The dashboard's Events page (`/events`): did we get evt_123, and what became of it.

Search the ledger by source, event id, type, status and time; open an event (headers,
payload, where each handler stands, each handler's turn at each attempt, its job in
rq-dashboard); requeue or replay it as the command does, for the handlers that have not
succeeded or for all; and see the last day per source with the queue right now. `views.py`
holds the routes.
"""

from workers.ops.events_page.views import ACTIONS, events_blueprint

__all__ = ["ACTIONS", "events_blueprint"]

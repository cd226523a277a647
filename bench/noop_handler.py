"""The one handler of the bench's one-handler drain: it returns at once, so the figure is
the worker's own cost of running a handler and recording its outcome."""

from workers import Event, handler


@handler("inbound")
def noop(event: Event) -> None:
    return None

"""The one `Settings` object of a web process, shared by the app and the HTTP guard.

uvicorn gives both the same per-process dict: the lifespan's `state`, which it also hands to
every connection's protocol (`app_state`, see `app/http_guard.py`) and copies into every
request's scope. Whichever needs the settings first loads them into it: the app at lifespan
startup (the usual case, before uvicorn listens), or the guard at the first connection under
`uvicorn --lifespan off`, where the app starts only with the first request.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from app.settings import Settings

KEY = "webhook.settings"


def shared_settings(state: MutableMapping[str, Any]) -> Settings:
    """The process's settings: those kept in `state`, or loaded now and kept there.

    Raises `ConfigError` (one line, naming the variable) when they cannot be loaded; then
    nothing is kept, and the next caller tries again and fails the same way.
    """
    settings = state.get(KEY)
    if not isinstance(settings, Settings):
        settings = Settings.load()
        state[KEY] = settings
    return settings

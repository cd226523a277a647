"""rq-dashboard, as the `dashboard:` Procfile line serves it.

What differs from `rq-dashboard` run bare:
- it refuses to start without credentials: the dashboard requeues and deletes events;
- HTTP Basic credentials are compared in constant time (rq-dashboard compares with `!=`);
- every page shows provider-controlled text as text, actions must be same-origin POSTs, and
  jobs that have not run cannot be deleted (`dashboard_guard.py`);
- a job's metadata reads as lines, times in ISO 8601, and the navigation has an Events page
  (`dashboard_pages.py`, `events_page/`), behind the same login and guard.
"""

from __future__ import annotations

import hmac

from flask import Flask, Response, current_app, request
from redis import Redis
from rq_dashboard.cli import make_flask_app
from rq_dashboard.web import setup_rq_connection

from app.logs import configure_logging
from app.settings import ConfigError, Settings
from workers.ops.dashboard_guard import ActionGuard, TransformingLoader, escape_rq_dashboard
from workers.ops.dashboard_pages import edit_template, readable_job_info
from workers.ops.events_page import ACTIONS as EVENT_ACTIONS
from workers.ops.events_page import events_blueprint

REALM = 'Basic realm="webhooks dashboard", charset="UTF-8"'


def create_dashboard(settings: Settings) -> Flask:
    username = settings.rq_dashboard_username or ""
    password = (
        settings.rq_dashboard_password.get_secret_value()
        if (settings.rq_dashboard_password)
        else ""
    )
    if not username or not password:
        raise ConfigError(
            "RQ_DASHBOARD_USERNAME and RQ_DASHBOARD_PASSWORD must be set: the dashboard "
            "can requeue and delete events, so it never runs without a login"
        )
    expected_user, expected_password = username.encode(), password.encode()

    app: Flask = make_flask_app(None, None, None, "")
    app.config["RQ_DASHBOARD_REDIS_URL"] = settings.redis_url
    app.config["RQ_DASHBOARD_POLL_INTERVAL"] = 2500
    setup_rq_connection(app)
    # rq-dashboard's templates escaped first, then edited (the edits anchor on `<%- %>`).
    escaped = TransformingLoader(app.jinja_env.loader, escape_rq_dashboard)  # type: ignore[arg-type]
    app.jinja_env.loader = TransformingLoader(escaped, edit_template)
    readable_job_info(app)

    def connection() -> Redis:
        # rq-dashboard keeps its connection on the app object.
        return current_app.redis_conn  # type: ignore[attr-defined, no-any-return]

    # Registered before the guard is built, so the guard covers its actions too.
    app.register_blueprint(events_blueprint(settings, connection))
    guard = ActionGuard(app, settings.webhook_queue, connection, logged_by_view=EVENT_ACTIONS)

    @app.before_request
    def require_login() -> Response | None:
        auth = request.authorization
        given_user = (auth.username or "").encode() if auth else b""
        given_password = (auth.password or "").encode() if auth else b""
        # Both comparisons always run, so timing tells nothing about which part was wrong.
        user_ok = hmac.compare_digest(given_user, expected_user)
        password_ok = hmac.compare_digest(given_password, expected_password)
        if auth is not None and user_ok and password_ok:
            return guard.check()
        return Response("Login required\n", 401, {"WWW-Authenticate": REALM})

    @app.after_request
    def harden(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return app


def run_dashboard(settings: Settings, host: str, port: int) -> None:
    # waitress, not Flask's development server: this page can requeue and delete events.
    import waitress

    configure_logging()
    app = create_dashboard(settings)
    print(f"dashboard on http://{host}:{port}/", flush=True)
    waitress.serve(app, host=host, port=port, threads=4, ident="webhooks-dashboard")

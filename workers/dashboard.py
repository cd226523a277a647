"""rq-dashboard, as the `dashboard:` Procfile line serves it.

Three things differ from `rq-dashboard` run bare:
- it refuses to start without credentials: the dashboard requeues and deletes events;
- HTTP Basic credentials are compared in constant time (rq-dashboard compares with `!=`);
- the job page's JSON has its strings HTML-escaped, because that page inserts description,
  metadata and exception text into the DOM unescaped, and all three can carry text that a
  provider or a handler's exception put there.
"""

from __future__ import annotations

import hmac
import html
import json
from typing import Any

from flask import Flask, Response, request
from rq_dashboard.cli import make_flask_app
from rq_dashboard.web import setup_rq_connection

from app.settings import ConfigError, Settings

REALM = 'Basic realm="webhooks dashboard", charset="UTF-8"'
ESCAPED_ENDPOINTS = {"rq_dashboard.job_info"}


def _escape(value: Any) -> Any:
    if isinstance(value, str):
        return html.escape(value)
    if isinstance(value, list):
        return [_escape(v) for v in value]
    if isinstance(value, dict):
        return {k: _escape(v) for k, v in value.items()}
    return value


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

    @app.before_request
    def require_login() -> Response | None:
        auth = request.authorization
        given_user = (auth.username or "").encode() if auth else b""
        given_password = (auth.password or "").encode() if auth else b""
        # Both comparisons always run, so timing tells nothing about which part was wrong.
        user_ok = hmac.compare_digest(given_user, expected_user)
        password_ok = hmac.compare_digest(given_password, expected_password)
        if auth is not None and user_ok and password_ok:
            return None
        return Response("Login required\n", 401, {"WWW-Authenticate": REALM})

    @app.after_request
    def escape_job_page(response: Response) -> Response:
        if request.endpoint in ESCAPED_ENDPOINTS and response.is_json:
            response.set_data(json.dumps(_escape(response.get_json())))
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    return app


def run_dashboard(settings: Settings, host: str, port: int) -> None:
    # waitress, not Flask's development server: this page can requeue and delete events.
    import waitress

    app = create_dashboard(settings)
    print(f"dashboard on http://{host}:{port}/", flush=True)
    waitress.serve(app, host=host, port=port, threads=4, ident="webhooks-dashboard")

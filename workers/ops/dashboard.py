"""rq-dashboard, as the `dashboard:` Procfile line serves it.

What differs from `rq-dashboard` run bare:
- it refuses to start without credentials: the dashboard requeues and deletes events;
- HTTP Basic credentials are compared in constant time (rq-dashboard compares with `!=`),
  each failure is logged, and a client (an IPv4 address, an IPv6 /64) that keeps failing
  is locked out for a while, its right password refused too (`login_brake.py`);
- every page shows provider-controlled text as text, actions must be same-origin POSTs, and
  jobs that have not run cannot be deleted (`dashboard_guard.py`);
- a job's metadata reads as lines, times in ISO 8601, the webhook queue's failed list says
  it holds dead letters, and the navigation has an Events page (`dashboard_pages.py`,
  `events_page/`), behind the same login and guard;
- its Redis is the one every process uses (`app/connection.py`: Sentinel's primary too, TLS,
  ACL users), kept for the process: rq-dashboard would build a client from its URL
  setting on every page, with a parser of its own; an unreachable Redis is a 503 page of
  one line that says why, never a 500.
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, request
from redis import Redis
from redis.exceptions import RedisError
from rq_dashboard.cli import make_flask_app
from rq_dashboard.web import blueprint, push_rq_connection

from app.connection import OPERATOR, sync_client
from app.library_logs import route_library_logs
from app.logs import configure_logging, logger
from app.redis_errors import describe
from app.settings import Settings
from app.startup_checks import Process, check_startup
from workers.ops.dashboard_guard import ActionGuard, TransformingLoader, escape_rq_dashboard
from workers.ops.dashboard_pages import edit_template, label_dead_letters, readable_job_info
from workers.ops.dashboard_requeue import DashboardRequeue
from workers.ops.events_page.views import ACTIONS as EVENT_ACTIONS
from workers.ops.events_page.views import events_blueprint
from workers.ops.login_brake import (
    LoginBrake,
    client_key,
    log_failure,
    log_lockout,
    retry_after,
    shown_user,
)
from workers.ops.redact import Redactor

REALM = 'Basic realm="webhooks dashboard", charset="UTF-8"'


def create_dashboard(settings: Settings, brake: LoginBrake | None = None) -> Flask:
    check_startup(settings, Process.DASHBOARD)
    brake = brake or LoginBrake()

    app: Flask = make_flask_app(None, None, None, "")
    # Shown in the page's instance list: where, never a credential.
    app.config["RQ_DASHBOARD_REDIS_URL"] = (where(settings),)
    app.config["RQ_DASHBOARD_POLL_INTERVAL"] = 2500
    use_connection(app, sync_client(settings, OPERATOR), settings)
    # rq-dashboard's templates escaped first, then edited (the edits anchor on `<%- %>`).
    escaped = TransformingLoader(app.jinja_env.loader, escape_rq_dashboard)  # type: ignore[arg-type]
    app.jinja_env.loader = TransformingLoader(escaped, edit_template)
    readable_job_info(app)
    label_dead_letters(app, settings.webhook_queue, settings.webhook_max_retries)

    def connection() -> Redis:
        # rq-dashboard's pages read it from the app object (`use_connection`).
        return current_app.redis_conn  # type: ignore[attr-defined, no-any-return]

    # Registered before the guard is built, so the guard covers its actions too.
    app.register_blueprint(events_blueprint(settings, connection))
    guard = ActionGuard(
        app,
        settings.webhook_queue,
        connection,
        logged_by_view=EVENT_ACTIONS,
        requeue=DashboardRequeue(settings, connection),
    )

    install_login(app, settings, brake, guard.check)
    return app


def install_login(
    app: Flask,
    settings: Settings,
    brake: LoginBrake,
    then: Callable[[], Response | None] = lambda: None,
) -> None:
    """HTTP Basic auth on every request, compared in constant time, a client that keeps
    failing locked out (`login_brake.py`); `then` runs after a good login (the action guard).
    And every answer's hardening headers."""
    username = settings.rq_dashboard_username or ""
    assert settings.rq_dashboard_password is not None  # the startup check requires both
    password = settings.rq_dashboard_password.get_secret_value()
    expected_user, expected_password = username.encode(), password.encode()
    redact = Redactor.of(settings)

    @app.before_request
    def require_login() -> Response | None:
        auth = request.authorization
        if auth is None:  # a browser's first request, before it asks for the login
            return Response("Login required\n", 401, {"WWW-Authenticate": REALM})
        client = client_key(request.remote_addr)
        # Refused before the credentials are looked at: right or wrong, a locked-out client
        # learns nothing, and nothing sleeps in one of waitress's few threads.
        wait = brake.locked(client)
        if wait:
            return Response(
                f"Too many failed logins from your address: try again in {retry_after(wait)} s\n",
                429,
                {"Retry-After": retry_after(wait)},
                mimetype="text/plain",
            )
        given_user = (auth.username or "").encode()
        given_password = (auth.password or "").encode()
        # Both comparisons always run, so timing tells nothing about which part was wrong.
        user_ok = hmac.compare_digest(given_user, expected_user)
        password_ok = hmac.compare_digest(given_password, expected_password)
        if user_ok and password_ok:
            brake.succeeded(client)
            return then()
        failure = brake.failed(client)
        log_failure(request.remote_addr, shown_user(auth.username or "", redact), failure)
        if failure.locked_for:
            log_lockout(client, failure)
        return Response("Login required\n", 401, {"WWW-Authenticate": REALM})

    @app.after_request
    def harden(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


def use_connection(app: Flask, connection: Redis, settings: Settings) -> None:
    """rq-dashboard's pages read `current_app.redis_conn`, which its own `before_request`
    rebuilds from RQ_DASHBOARD_REDIS_URL on every page: that hook gives way to one that
    hands every page this client."""
    app.redis_conn = connection  # type: ignore[attr-defined]
    hooks = app.before_request_funcs.setdefault(blueprint.name, [])
    hooks[:] = [hook for hook in hooks if hook is not push_rq_connection]

    def keep_connection() -> None:
        current_app.redis_conn = connection  # type: ignore[attr-defined]

    hooks.insert(0, keep_connection)

    # rq-dashboard's front page swallows a connection error into a bare 200 "Connection
    # Error": asked first, Redis's answer is the one-line 503 below, which says why.
    endpoint = f"{blueprint.name}.queues_overview"
    front_page = app.view_functions[endpoint]

    def queues_overview(**kwargs: Any) -> Any:
        connection.ping()
        return front_page(**kwargs)

    app.view_functions[endpoint] = queues_overview

    @app.errorhandler(RedisError)
    def redis_unavailable(exc: RedisError) -> Response:
        line = describe(exc, settings.cluster_target or settings.redis_target)
        logger.warning(f"dashboard: redis unavailable: {line}")
        return Response(f"Redis unavailable: {line}\n", 503, {"Retry-After": "5"}, "text/plain")


def where(settings: Settings) -> str:
    cluster = settings.cluster_target
    if cluster is None:
        return settings.redis_target.where
    return f"shard {settings.shard} of the {cluster.where}"


def end_with_parent() -> None:
    """A shard's dashboard behind the front ends when the front does, however it ended."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def run_dashboard(settings: Settings, host: str, port: int, unix_socket: str | None = None) -> None:
    """Serve the dashboard: on HOST:PORT, or on a unix socket (a cluster's shard dashboard
    behind the front, `dashboard_front.py`, under its path `/shards/<n>`)."""
    # waitress, not Flask's development server: this page can requeue and delete events.
    import waitress

    configure_logging()
    # waitress's lines in ours; its "Task queue depth" warnings at DEBUG (library_logs.py).
    route_library_logs("waitress")
    app = create_dashboard(settings)
    if unix_socket is not None:
        end_with_parent()
        prefix = f"/shards/{settings.shard}"
        waitress.serve(
            app, unix_socket=unix_socket, url_prefix=prefix, threads=4, ident="webhooks-dashboard"
        )
        return
    print(f"dashboard on http://{host}:{port}/", flush=True)
    waitress.serve(app, host=host, port=port, threads=4, ident="webhooks-dashboard")

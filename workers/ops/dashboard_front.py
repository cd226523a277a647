"""`webhooks dashboard` on a Redis Cluster: one address for every shard's dashboard.

RQ names its keys with one prefix per process, and rq-dashboard shows the keys of one
prefix: each shard therefore has a dashboard process of its own, rq-dashboard and the Events
page of that shard (`webhooks dashboard --shard N`). This front starts a shard's process the
first time one of its pages is asked for, on a unix socket in a directory only this user
reaches, and stops them all when it stops. It logs the person in as the dashboard does, lists
the shards (each one's primary, and whether it answers), and passes `/shards/<n>/...` to shard
n's process as it came: Host, Origin and credentials included, so that the shard's own
login and action guard check them again (`dashboard.py`, `dashboard_guard.py`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import FrameType

import httpx
from flask import Flask, Response, request

from app.logs import configure_logging, logger
from app.settings import Settings
from app.shards import Shards
from app.startup_checks import Process, check_startup
from workers.ops import front_bulk, front_bulk_pages
from workers.ops.dashboard_guard import same_origin
from workers.ops.events_page.bulk import Verb
from workers.ops.events_page.templates import STYLESHEET
from workers.ops.front_bulk import Unanswered
from workers.ops.front_events import events_page
from workers.ops.front_pages import find_page, page, shard_list_body
from workers.ops.login_brake import LoginBrake

# Not passed on, either way: they are about one connection, not the request.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
# A shard's process answers on its socket within this once started, or is said not to.
START_TIMEOUT = 30.0


@dataclass
class ShardDashboards:
    """The shards' dashboard processes, each started when first needed."""

    count: int
    directory: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="webhooks-dash-"))
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    # One per shard: a shard's process starting holds up that shard's pages only (a bulk
    # action starts several at once).
    locks: dict[int, threading.Lock] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # guards `locks`

    def socket(self, shard: int) -> str:
        return os.path.join(self.directory, f"shard-{shard}.sock")

    def ensure(self, shard: int) -> str:
        """Shard `shard`'s socket, its process started (again, if it ended) first."""
        with self.lock:
            mine = self.locks.setdefault(shard, threading.Lock())
        with mine:
            running = self.processes.get(shard)
            if running is not None and running.poll() is None:
                return self.socket(shard)
            path = self.socket(shard)
            if os.path.exists(path):
                os.unlink(path)
            command = [sys.executable, "-m", "workers", "dashboard", f"--shard={shard}"]
            self.processes[shard] = subprocess.Popen(  # noqa: S603 - our own command line
                [*command, f"--unix-socket={path}"]
            )
            self._wait_for(shard, path)
            return path

    def _wait_for(self, shard: int, path: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.processes[shard].poll() is not None:
                raise ShardDown(f"shard {shard}'s dashboard ended at its start (its log says why)")
            try:
                with httpx.Client(transport=httpx.HTTPTransport(uds=path), timeout=2) as client:
                    client.get(f"http://shard/shards/{shard}/")  # any answer: it is up
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise ShardDown(f"shard {shard}'s dashboard did not answer within {START_TIMEOUT:.0f} s")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


class ShardDown(Exception):
    """A shard's dashboard process could not be reached: said in one line, as a 503."""


def create_front(
    settings: Settings, shards: ShardDashboards, brake: LoginBrake | None = None
) -> Flask:
    from workers.ops.dashboard import install_login

    check_startup(settings, Process.DASHBOARD)
    app = Flask(__name__)
    # The front's own actions (bulk requeue and purge) as a shard's: same-origin POSTs only.
    install_login(app, settings, brake or LoginBrake(), then=refuse_cross_origin)
    count = Shards(settings.webhook_shards)

    @app.get("/")
    def shard_list() -> Response:
        return page("Shards", shard_list_body(settings, count))

    @app.get("/events")
    def every_shards_events() -> Response:
        return events_page(settings, count, request.args)

    @app.get("/events/bulk")
    def bulk_confirmation() -> Response:
        return front_bulk_pages.confirm(settings, count, request.args)

    @app.post("/events/bulk/<verb>")
    def bulk_action(verb: str) -> Response:
        try:
            chosen = Verb(verb)
        except ValueError:
            return Response("no such action\n", 404, mimetype="text/plain")
        return front_bulk.act(count, chosen, request.form, post_to(shards))

    @app.get("/style.css")
    def stylesheet() -> Response:
        return Response(STYLESHEET, mimetype="text/css", headers={"Cache-Control": "max-age=300"})

    @app.get("/events/find")
    def find_event() -> Response:
        return find_page(settings, count, request.args.get("id", ""), request.args.get("source"))

    @app.route("/shards/<int:shard>/", methods=["GET", "POST"])
    @app.route("/shards/<int:shard>/<path:rest>", methods=["GET", "POST"])
    def to_shard(shard: int, rest: str = "") -> Response:
        if shard >= count.count:
            return Response(f"no shard {shard} (WEBHOOK_SHARDS={count.count})\n", 404)
        try:
            return _forward(shards.ensure(shard))
        except (ShardDown, httpx.HTTPError) as exc:
            line = (
                str(exc) if isinstance(exc, ShardDown) else f"shard {shard}: {type(exc).__name__}"
            )
            logger.warning(f"dashboard: {line}")
            return Response(f"{line}\n", 503, {"Retry-After": "5"}, mimetype="text/plain")

    return app


def refuse_cross_origin() -> Response | None:
    """A POST to the front itself (not passed to a shard, whose guard checks its own) must
    come from one of this dashboard's pages."""
    if request.method == "POST" and not request.path.startswith("/shards/") and not same_origin():
        return Response("cross-origin request refused\n", 403, mimetype="text/plain")
    return None


def post_to(shards: ShardDashboards) -> front_bulk.PostToShard:
    """Forms posted to shards' processes as the person's own request: their login, Host and
    Origin (read here, in the request: the posts run in threads of their own), which each
    shard's login and action guard check again."""
    headers = _passed(request.headers.items(), skip={"content-type", "cookie"})
    host = request.host

    def post(shard: int, path: str, form: dict[str, str]) -> httpx.Response | Unanswered:
        try:
            socket = shards.ensure(shard)
        except ShardDown as exc:
            logger.warning(f"dashboard: {exc}")
            return Unanswered.UNREACHED
        try:
            with _client(socket, timeout=60) as client:
                return client.post(
                    f"http://{host}/shards/{shard}/{path}", headers=headers, data=form
                )
        except httpx.HTTPError as exc:
            logger.warning(f"dashboard: shard {shard}: {type(exc).__name__}")
            # Nothing reached it when it refused the connection; anything else may have.
            unsent = isinstance(exc, httpx.ConnectError)
            return Unanswered.UNREACHED if unsent else Unanswered.UNSURE

    return post


def _passed(
    headers: Iterable[tuple[str, str]], skip: frozenset[str] | set[str] = frozenset()
) -> dict[str, str]:
    """The request's headers a shard's process is given: not those about one connection."""
    return {k: v for k, v in headers if k.lower() not in HOP_BY_HOP and k.lower() not in skip}


def _client(socket: str, timeout: float) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=socket), timeout=timeout)


def _forward(socket: str) -> Response:
    """The request, as it came, to a shard's dashboard; its answer, as it came back."""
    headers = _passed(request.headers.items())
    with _client(socket, timeout=30) as client:
        answer = client.request(
            request.method,
            f"http://{request.host}{request.full_path if request.query_string else request.path}",
            headers=headers,
            content=request.get_data(),
        )
    kept = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in HOP_BY_HOP]
    kept = [(k, v) for k, v in kept if k.lower() != "content-encoding"]  # httpx decoded it
    return Response(answer.content, answer.status_code, kept)


def run_front(settings: Settings, host: str, port: int) -> None:
    import waitress

    configure_logging()
    shards = ShardDashboards(settings.webhook_shards)
    os.chmod(shards.directory, 0o700)
    app = create_front(settings, shards)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"dashboard on http://{host}:{port}/ (a page per shard)", flush=True)
    try:
        waitress.serve(app, host=host, port=port, threads=4, ident="webhooks-dashboard")
    finally:
        shards.stop()

"""`webhooks send` and `webhooks sources` against the real `web:` process: what a newcomer
types after the quick start, and every way it can go wrong, each one line and exit 1."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq import Queue

from tests.conftest import SECRET, webhooks
from tests.processes import Process, Stack
from workers.dev.keypair import throwaway_key
from workers.dev.redis_server import RedisServer

STRIPE = "whsec_stripe-dev-secret-0123456789"
SOURCES = {
    "WEBHOOK_SOURCES": "inbound,stripe",
    "WEBHOOK_SIGNING_SECRET": SECRET,
    "WEBHOOK_SECRET_STRIPE": STRIPE,
}


@pytest.fixture
def web(redis_server: RedisServer, redis: Redis, make_stack: Callable[..., Stack]) -> Process:
    return make_stack(redis_server.url, **SOURCES).start("web")


@pytest.fixture
def configured(
    monkeypatch: pytest.MonkeyPatch, redis_server: RedisServer, tmp_path: Path
) -> Iterator[None]:
    """The command's environment: the same sources, no `.env`, no stack nearby."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Procfile").write_text("")  # the checkout's root: no stack above it
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    for name, value in SOURCES.items():
        monkeypatch.setenv(name, value)
    yield


def queued(redis: Redis) -> list[tuple[str, str]]:
    jobs = Queue("webhooks", connection=redis).get_jobs()
    return sorted((job.meta["source"], job.meta["event_id"]) for job in jobs)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_send_signs_as_the_provider_does_and_the_same_id_again_is_a_duplicate(
    web: Process, configured: None, redis: Redis
) -> None:
    first = webhooks("send", "stripe", "invoice.paid", "--id", "evt_1", "--url", web.url)
    assert first.exit_code == 0, first.output
    assert one_line(first.stdout) == f"accepted evt_1 → {web.url}/webhooks/stripe (200)"
    again = webhooks("send", "stripe", "invoice.paid", "--id", "evt_1", "--url", web.url)
    assert (again.exit_code, again.stdout.split()[0]) == (0, "duplicate")
    assert queued(redis) == [("stripe", "evt_1")]


def test_send_json_prints_status_id_and_http_status(
    web: Process, configured: None, redis: Redis
) -> None:
    result = webhooks("send", "inbound", "--id", "evt_2", "--url", web.url, "--json")
    assert json.loads(result.stdout) == {"status": "accepted", "id": "evt_2", "http_status": 200}


def test_send_data_replaces_the_event_object(
    web: Process, configured: None, redis: Redis, tmp_path: Path
) -> None:
    (tmp_path / "invoice.json").write_text('{"id": "in_42", "amount_due": 1200}')
    result = webhooks(
        "send",
        "stripe",
        "invoice.paid",
        "--id",
        "evt_3",
        "--data",
        "@invoice.json",
        "--url",
        web.url,
    )
    assert result.exit_code == 0, result.output
    [job] = Queue("webhooks", connection=redis).get_jobs()
    assert json.loads(job.args[3])["data"]["object"] == {"id": "in_42", "amount_due": 1200}


def test_the_datas_own_id_is_the_event_id_and_another_id_is_refused_naming_both(
    web: Process, configured: None, redis: Redis
) -> None:
    data = '{"id": "evt_p1", "data": {"total": 5}}'  # hmac: --data is the whole body
    sent = webhooks("send", "inbound", "--data", data, "--url", web.url)
    assert sent.exit_code == 0, sent.output
    assert one_line(sent.stdout) == f"accepted evt_p1 → {web.url}/webhooks/inbound (200)"
    [job] = Queue("webhooks", connection=redis).get_jobs()
    body = json.loads(job.args[3])
    assert (body["id"], body["data"]) == ("evt_p1", {"total": 5})
    same = webhooks("send", "inbound", "--data", data, "--id", "evt_p1", "--url", web.url)
    assert (same.exit_code, same.stdout.split()[:2]) == (0, ["duplicate", "evt_p1"])
    other = webhooks("send", "inbound", "--data", data, "--id", "evt_p2", "--url", web.url)
    assert other.exit_code == 1
    assert one_line(other.stderr) == (
        "Error: hmac: the data has its own id, 'evt_p1', and the id given is 'evt_p2': "
        "give the same id, or none"
    )
    assert queued(redis) == [("inbound", "evt_p1")]


def test_an_id_the_data_would_leave_out_of_a_digest_id_event_is_refused_and_nothing_sent(
    configured: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dropbox's event id is the body's digest, and `--data` is its whole body."""
    monkeypatch.setenv("WEBHOOK_SOURCES", "inbound,box:dropbox")
    monkeypatch.setenv("WEBHOOK_SECRET_BOX", "dropbox-app-secret")
    data = '{"list_folder": {"accounts": ["dbid:A"]}}'
    # Port 9: a request that went out would be refused there, and say so instead.
    sent = webhooks("send", "box", "--data", data, "--id", "evt_b1", "--url", "http://127.0.0.1:9")
    assert sent.exit_code == 1, sent.output
    error = one_line(sent.stderr)
    assert error.startswith("Error: dropbox: the event id is the body's digest (sha256:")
    assert error.endswith(
        "the id given, 'evt_b1', would be in none of it; give none, or put it in the data"
    )


def test_the_datas_own_type_is_sent_when_no_type_is_given_and_another_is_refused(
    web: Process, configured: None, redis: Redis
) -> None:
    data = '{"type": "invoice.paid", "data": {"total": 5}}'  # hmac: --data is the whole body
    sent = webhooks("send", "inbound", "--data", data, "--id", "evt_t1", "--url", web.url)
    assert sent.exit_code == 0, sent.output
    [job] = Queue("webhooks", connection=redis).get_jobs()
    assert json.loads(job.args[3])["type"] == "invoice.paid"
    other = webhooks("send", "inbound", "order.created", "--data", data, "--url", web.url)
    assert other.exit_code == 1
    assert "the data has its own type, 'invoice.paid'" in one_line(other.stderr)
    assert queued(redis) == [("inbound", "evt_t1")]


def test_an_id_with_outer_spaces_is_reported_as_the_receiver_answers_it(
    redis_server: RedisServer,
    redis: Redis,
    make_stack: Callable[..., Stack],
    configured: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Standard Webhooks signs its id header, GitHub's is not signed: either way HTTP drops
    # the outer spaces of a header's value, and the receiver answers the id without them.
    sources = {
        "WEBHOOK_SOURCES": "hooks:standard,repo:github",
        "WEBHOOK_SECRET_HOOKS": "whsec_" + base64.b64encode(b"standard-key-0123").decode(),
        "WEBHOOK_SECRET_REPO": "github-secret-0123",
    }
    for name, value in sources.items():
        monkeypatch.setenv(name, value)
    web = make_stack(redis_server.url, **sources).start("web")
    for source in ("hooks", "repo"):
        sent = webhooks("send", source, "--id", " evt_spaced ", "--url", web.url)
        assert one_line(sent.output) == f"accepted evt_spaced → {web.url}/webhooks/{source} (200)"
    assert queued(redis) == [("hooks", "evt_spaced"), ("repo", "evt_spaced")]


def test_the_secret_given_signs_for_a_source_that_signs_with_a_secret(
    web: Process, configured: None, redis: Redis
) -> None:
    sent = webhooks("send", "inbound", "--secret", SECRET, "--id", "evt_s1", "--url", web.url)
    assert sent.exit_code == 0, sent.output
    assert queued(redis) == [("inbound", "evt_s1")]


@pytest.mark.parametrize(("source", "provider"), [("ping", "discord"), ("mail", "sendgrid")])
def test_secret_for_a_source_that_signs_with_a_private_key_is_a_usage_error(
    configured: None, monkeypatch: pytest.MonkeyPatch, source: str, provider: str
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", f"inbound,{source}:{provider}")
    public = throwaway_key(source, provider).public_value  # what the source verifies with
    monkeypatch.setenv(f"WEBHOOK_SECRET_{source.upper()}", public)
    result = webhooks("send", source, "--secret", "abc", "--url", "http://127.0.0.1:9")
    assert result.exit_code == 2 and "Traceback" not in result.output
    [error] = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert error == (
        f"Error: --secret cannot apply to source {source!r}: {provider} signs with a "
        "private key (the one `make run` made for it), not a secret"
    )


def test_a_wrong_secret_is_refused_and_the_exit_status_says_so(
    web: Process, configured: None, redis: Redis
) -> None:
    result = webhooks("send", "stripe", "--secret", "whsec_not-the-real-one-0123", "--url", web.url)
    assert result.exit_code == 1
    assert one_line(result.stderr).startswith("refused ")
    assert "(401): " in result.stderr and queued(redis) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["send", "nosuch"], "unknown source 'nosuch'; configured sources: inbound, stripe"),
        (["send", "stripe", "--data", "{not json"], "--data is not JSON"),
        (["send", "stripe", "--data", '{"a": NaN}'], "--data is not JSON"),
        (["send", "stripe", "--data", '{"a": 1e999}'], "--data is not JSON"),
        (["send", "inbound", "--data", '{"a": "\\ud800"}'], "--data is not JSON"),
        (["send", "stripe", "--data", "@missing.json"], "--data @missing.json: cannot read it"),
        (["send", "stripe", "--url", "ftp://x"], "--url must be http(s)://"),
        (["send", "stripe", "--url", "http://[::1"], "--url must be http(s)://"),
        (["send", "stripe", "--url", "http://127.0.0.1:abc"], "--url must be http(s)://"),
        (["send", "stripe", "--url", "http://127.0.0.1:9/a\nb"], "--url must be http(s)://"),
        (["send", "stripe"], "no `make run` stack of this checkout is up"),
    ],
)
def test_bad_input_to_send_is_one_line_and_exit_1(
    configured: None, args: list[str], says: str
) -> None:
    result = webhooks(*args)
    assert result.exit_code == 1
    assert says in one_line(result.stderr), result.stderr


def test_a_source_without_its_secret_is_one_line_naming_the_variable(
    configured: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEBHOOK_SECRET_STRIPE")
    result = webhooks("send", "stripe", "--url", "http://127.0.0.1:9")
    assert result.exit_code == 1
    assert "WEBHOOK_SECRET_STRIPE is not set" in one_line(result.stderr)


def test_a_receiver_that_is_down_is_one_line_and_exit_1(configured: None) -> None:
    # Bound but not listening, for the whole test: connecting is refused, and no other
    # test's server can take the port meanwhile.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        result = webhooks("send", "inbound", "--url", f"http://127.0.0.1:{port}")
    assert result.exit_code == 1
    assert "cannot reach the receiver at" in one_line(result.stderr)


def test_sources_lists_each_source_with_its_path_and_secret_count_never_a_secret(
    configured: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBHOOK_SOURCES", "inbound,stripe,github")
    monkeypatch.setenv("WEBHOOK_SECRET_STRIPE", f"{STRIPE},whsec_stripe-next-secret-0123")
    result = webhooks("sources", "--json")
    assert result.exit_code == 0, result.output
    listed = {line["name"]: line for line in map(json.loads, result.stdout.splitlines())}
    assert listed["stripe"] | {"problem": ""} == {
        "name": "stripe",
        "provider": "stripe",
        "path": "/webhooks/stripe",
        "secrets": 2,
        "secret_set": True,
        "tolerance": 300,
        "problem": "",
    }
    assert listed["github"]["secret_set"] is False
    assert "WEBHOOK_SECRET_GITHUB is not set" in listed["github"]["problem"]
    table = webhooks("sources")
    assert STRIPE not in table.output and SECRET not in table.output
    assert table.stdout.strip().endswith("3 sources")

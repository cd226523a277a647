"""The cluster dashboard front's bulk action over the shards (`workers/ops/front_bulk.py`):
each shard's answer summed, a shard that could not be reached and one that did not say what
it did each named (the first did nothing, the second may have done part), one log line of
the person's action; and the result's banner, which shows only what an action writes."""

from __future__ import annotations

import base64
import logging
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from flask import Flask

from app.shards import Shards
from workers.ops.events_page.bulk import Verb
from workers.ops.front_bulk import Unanswered, act
from workers.ops.front_bulk_pages import banner

SHARDS = Shards(4)
LOGIN = "Basic " + base64.b64encode(b"ops:secret-password").decode()


def shard_said(shard: int, **counts: int) -> httpx.Response:
    """A shard's action's answer: to its Events page, with what it did."""
    query = urlencode({"status": "dead", "bulk": "requeue", **counts, "batch": f"tok{shard}" * 4})
    return httpx.Response(303, headers={"location": f"/shards/{shard}/events?{query}"})


def test_a_bulk_action_names_the_shards_that_gave_no_result_and_sums_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers = {
        0: shard_said(0, done=3, gone=1, unmatched=0),
        1: Unanswered.UNREACHED,
        2: httpx.Response(503, text="Redis unavailable"),
        3: shard_said(3, done=2, gone=0, unmatched=1),
    }
    posted: dict[int, dict[str, str]] = {}

    def post(shard: int, path: str, form: dict[str, str]) -> httpx.Response | Unanswered:
        assert path == "events/bulk/requeue"
        posted[shard] = form
        return answers[shard]

    form = {"status": "dead", "handlers": "failed", "jobs-99": "inbound-x"}
    form |= {f"jobs-{s}": f"inbound-{s}a inbound-{s}b <script>" for s in SHARDS}
    app = Flask(__name__)
    context = app.test_request_context("/events/bulk/requeue", headers={"Authorization": LOGIN})
    with context, caplog.at_level(logging.WARNING, logger="webhooks"):
        answer = act(SHARDS, Verb.REQUEUE, form, post)
    assert answer.status_code == 303
    assert posted[1]["jobs"] == "inbound-1a inbound-1b script"
    assert set(posted) == set(SHARDS)  # jobs-99 names no shard
    args = {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()}
    assert (args["done"], args["gone"], args["unmatched"]) == ("5", "1", "1")
    assert (args["unreached"], args["unsure"]) == ("1", "2")
    assert args["batch-0"] == "tok0" * 4 and "batch-1" not in args
    [logged] = [r for r in caplog.records if r.getMessage() == "dashboard action"]
    assert logged.__dict__["user"] == "ops" and logged.__dict__["count"] == 5

    shown = banner(SHARDS, args)
    assert "5 requeued, 1 skipped: no longer a dead letter" in shown
    assert 'href="/shards/0/events?requeued=tok0tok0tok0tok0#search"' in shown
    assert "Shard 1: its dashboard could not be reached" in shown
    assert "Shard 2: it did not say what it did" in shown


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"unreached": "²"}, ""),
        ({"unsure": "<i>1</i>", "batch-1": "x<y"}, ""),
        ({"unreached": "1,99999"}, ""),
        ({"unreached": "1,7"}, "Shard 1"),
    ],
)
def test_a_result_banner_written_by_hand_shows_counts_and_shard_numbers_only(
    args: dict[str, str], named: str
) -> None:
    shown = banner(SHARDS, {"bulk": "requeue", "done": "1", **args})
    assert "1 requeued." in shown
    assert "<i>" not in shown and "x<y" not in shown and "requeued=" not in shown
    assert re.findall(r'class="error">(Shard [^:]*):', shown) == ([named] if named else [])

"""What the bench's parts share: the settings of a bench receiver, filling a queue, ratios."""

from __future__ import annotations

import hashlib
import json
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from redis import Redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.intake import SyncIntake  # noqa: E402
from app.providers.base import Delivery  # noqa: E402
from app.settings import Settings  # noqa: E402

SECRET = "bench-secret-of-24-bytes"
BIN = Path(sys.executable).parent
# Every job carries about a kilobyte that compresses as JSON of ids and hashes does (not
# the thirtyfold a repeated letter would), as a real event does.
PADDING = "".join(hashlib.sha256(str(n).encode()).hexdigest() for n in range(14))


def bench_settings(redis_url: str, **overrides: Any) -> Settings:
    return Settings.load(
        _env_file=None,
        redis_url=redis_url,
        webhook_signing_secret=SECRET,
        webhook_key_prefix="bench",
        **overrides,
    )


def event_body(event_id: str) -> bytes:
    return json.dumps(
        {"id": event_id, "type": "order.created", "data": {"note": PADDING}},
        separators=(",", ":"),
    ).encode()


def fill(settings: Settings, connection: Redis, count: int, tag: str, traced: bool = False) -> None:
    """Queue `count` events through the receiver's own claim script; `traced`, each with a
    sampled W3C traceparent of its own in its meta, as a receiver with tracing on claims it."""
    intake = SyncIntake(settings, connection)
    source = settings.sources["inbound"]
    for n in range(count):
        event_id = f"evt_{tag}_{n}"
        delivery = Delivery(event_id, "order.created")
        trace = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01" if traced else ""
        _, keys, args = intake.claim_call(
            source, delivery, event_body(event_id), time.time(), trace=trace
        )
        intake.replicated(intake.claim_script, keys, args)


def summary(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """Contender and baseline rates measured side by side: the median of their ratios."""
    ratios = [c / b for c, b in pairs]
    return {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "rate": statistics.median(c for c, _ in pairs),
        "baseline_rate": statistics.median(b for _, b in pairs),
    }

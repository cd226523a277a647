"""What the signer tests share: a configured source served by the real app, and its queue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from app.settings import SourceConfig
from workers.signing import SignedRequest


@dataclass
class Target:
    source: SourceConfig
    client: TestClient
    redis: Redis

    def post(self, request: SignedRequest) -> Any:
        return self.client.post(request.url, content=request.body, headers=request.headers)

    def jobs(self) -> list[Any]:
        return Queue("webhooks", connection=self.redis).get_jobs()

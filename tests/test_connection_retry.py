"""Each Redis client gets the Retry of its own kind: redis-py 8.2 converts a synchronous
Retry given to an asyncio client, and warns at every start that it did (and that a custom
`call_with_retry` would be lost)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
from redis.asyncio.retry import Retry as AsyncRetry
from redis.retry import Retry

from app.connection import OPERATOR, RECEIVER, async_client, sync_client
from app.settings import Settings

SENTINEL = {"redis_sentinels": "127.0.0.1:1", "redis_sentinel_master": "m"}


@pytest.mark.parametrize("target", [{}, SENTINEL], ids=["one server", "sentinel"])
def test_the_receivers_asyncio_client_gets_an_asyncio_retry_and_no_warning(
    make_settings: Callable[..., Settings], target: dict[str, str]
) -> None:
    settings = make_settings(**target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # redis-py's conversion warning fails the build
        client = async_client(settings, RECEIVER)
    retry = client.connection_pool.connection_kwargs["retry"]
    assert isinstance(retry, AsyncRetry) and retry.get_retries() == RECEIVER.retries


@pytest.mark.parametrize("target", [{}, SENTINEL], ids=["one server", "sentinel"])
def test_a_synchronous_client_gets_a_synchronous_retry(
    make_settings: Callable[..., Settings], target: dict[str, str]
) -> None:
    client = sync_client(make_settings(**target), OPERATOR)
    retry = client.connection_pool.connection_kwargs["retry"]
    assert type(retry) is Retry and retry.get_retries() == OPERATOR.retries

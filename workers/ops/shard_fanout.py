"""One `webhooks` command over every shard of a cluster: the same work done on each shard,
its answers gathered, a shard that fails named while the others answer.

RQ names its keys with one prefix per process (RQ_KEY_PREFIX, read when rq is imported), so
the work of one shard cannot use RQ's classes in a process that used another shard's. Each
shard's work therefore runs in a child forked before rq is imported: it sets the shard's
prefix, imports what it needs (~0.06 s of CPU), does its work on its own connection and
sends back its answer, pickled. On one Redis the work runs here, on the command's connection.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

import click
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.connection import OPERATOR, slot_map, sync_client
from app.logs import terminal_text
from app.redis_errors import describe, what_went_wrong
from app.settings import ConfigError, Settings
from app.shards import Shards
from workers.runtime.shard_workers import claim_rq_prefix, for_shard, rq_prefix

T = TypeVar("T")

# Children at once: each is mostly waiting on its primary, and 1,024 shards must not mean
# 1,024 processes.
PARALLEL = 8


@dataclass(frozen=True, slots=True)
class ShardAnswer(Generic[T]):
    """One shard's answer: its value, or why it has none (one line, no secret)."""

    shard: int | None  # None on one Redis
    value: T | None = None
    failure: str | None = None


@dataclass
class Fanout:
    """The shards a command acts on: one Redis (`connection`), or every shard of a cluster."""

    settings: Settings
    connection: Redis | None  # None on a cluster
    failed: bool = False  # a shard did not answer (said on stderr)

    def answered(
        self, work: Callable[[Settings, Redis], T], shards: list[int] | None = None
    ) -> list[tuple[int | None, T]]:
        """(shard, what `work` returned there) of each shard that answered; each that did
        not is named on stderr, one line each, and marks the command failed."""
        answers = self.run(work, shards)
        for line in failures(answers):
            click.echo(terminal_text(line), err=True)
            self.failed = True
        return [(a.shard, cast(T, a.value)) for a in answers if a.failure is None]

    def run(
        self, work: Callable[[Settings, Redis], T], shards: list[int] | None = None
    ) -> list[ShardAnswer[T]]:
        """`work(settings, connection)` on each shard (those given, else all), in shard
        order; on one Redis, once, here, its errors raised as they come. On a cluster it
        runs in a child: what it returns must pickle, what it prints is lost, and a click
        error it raises fails the whole command."""
        if self.connection is not None:
            return [ShardAnswer(None, work(self.settings, self.connection))]
        settings = self.settings
        target = settings.cluster_target
        assert target is not None
        if "rq" in sys.modules:  # a module of the command imports rq at import: a bug
            raise RuntimeError("rq is imported before the shards' processes set its prefix")
        # Read once here, so that each child starts with the map and does not ask again.
        try:
            slot_map(target).refresh()
        except RedisError as exc:  # no node answered: one line, not one a shard
            raise click.ClickException(describe(exc, target)) from None
        chosen = list(range(settings.webhook_shards)) if shards is None else shards
        sys.stdout.flush()
        sys.stderr.flush()
        answers: dict[int, ShardAnswer[T]] = {}
        for batch in _batches(chosen, PARALLEL):
            answers |= _run_batch(settings, work, batch)
        for answer in answers.values():
            if answer.failure is not None and answer.failure.startswith(_REFUSED):
                raise click.ClickException(answer.failure.removeprefix(_REFUSED))
        return [answers[shard] for shard in chosen]


def _batches(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


_REFUSED = "refused: "


def _run_batch(
    settings: Settings, work: Callable[[Settings, Redis], T], shards: list[int]
) -> dict[int, ShardAnswer[T]]:
    readers: dict[int, tuple[int, int]] = {}  # shard: (pid, read end)
    for shard in shards:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no branch - the child's side is measured by coverage's fork patch
            _child(settings, work, shard, read_end, write_end)
        os.close(write_end)
        readers[shard] = (pid, read_end)
    try:
        return _answers(readers)
    finally:  # Ctrl+C included: each child ends its shard's work and is reaped
        for pid, _ in readers.values():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _answers(readers: dict[int, tuple[int, int]]) -> dict[int, ShardAnswer[T]]:
    shards = list(readers)
    received: dict[int, bytearray] = {shard: bytearray() for shard in shards}
    selector = selectors.DefaultSelector()
    for shard, (_, read_end) in readers.items():
        selector.register(read_end, selectors.EVENT_READ, shard)
    while selector.get_map():
        for key, _ in selector.select():
            chunk = os.read(key.fd, 1 << 16)
            if chunk:
                received[key.data] += chunk
            else:
                selector.unregister(key.fd)
                os.close(key.fd)
    selector.close()
    answers: dict[int, ShardAnswer[T]] = {}
    for shard, (pid, _) in readers.items():
        _, status = os.waitpid(pid, 0)
        try:
            answers[shard] = pickle.loads(bytes(received[shard]))  # noqa: S301 - our own child
        except (pickle.UnpicklingError, EOFError):
            code = os.waitstatus_to_exitcode(status)
            ended = f"its process ended ({code}) with no answer"
            answers[shard] = ShardAnswer(shard, failure=ended)
    return answers


def _child(
    settings: Settings, work: Callable[[Settings, Redis], T], shard: int, unused: int, fd: int
) -> None:
    """The shard's process: its RQ prefix, its connection, its work, its answer; never back
    into the command's code (os._exit), whatever happens, a failure to say it included.
    Ctrl+C is the parent's to act on: a shard's requeue is not stopped halfway by it."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.close(unused)
        answer = _answer(settings, work, shard)
        with os.fdopen(fd, "wb") as out:
            out.write(pickle.dumps(answer))
        code = 0 if answer.failure is None or not answer.failure.endswith(_BUG) else 1
    except BaseException:  # pragma: no cover - an answer that does not pickle, stderr gone
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


_BUG = "(traceback above)"


def _answer(settings: Settings, work: Callable[[Settings, Redis], T], shard: int) -> ShardAnswer[T]:
    try:
        claim_rq_prefix(rq_prefix(Shards(settings.webhook_shards), shard))
        mine = for_shard(settings, shard)
        return ShardAnswer(shard, work(mine, sync_client(mine, OPERATOR)))
    except (RedisError, ConfigError) as exc:
        return ShardAnswer(shard, failure=_failure(settings, shard, exc))
    except click.ClickException as exc:
        return ShardAnswer(shard, failure=_REFUSED + exc.format_message())
    except Exception as exc:  # a bug: said on stderr, the shard named as failed
        traceback.print_exc()
        return ShardAnswer(shard, failure=f"{type(exc).__name__} {_BUG}")


def _failure(settings: Settings, shard: int, exc: BaseException) -> str:
    """Where the shard's primary is (when the map knows) and what went wrong."""
    target = settings.cluster_target
    assert target is not None
    if isinstance(exc, ConfigError):
        return str(exc)
    lead = "cannot reach" if isinstance(exc, RedisConnectionError | RedisTimeoutError) else "at"
    known = slot_map(target)
    try:
        primary = f"primary {known.lookup(Shards(settings.webhook_shards).slot(shard))}"
    except RedisError:
        primary = "no primary known"
    what = what_went_wrong(exc, target)
    return f"{lead} {primary}: {what}"


def failures(answers: list[ShardAnswer[T]]) -> list[str]:
    """`shard N: what went wrong`, one line a failed shard."""
    return [f"shard {a.shard}: {a.failure}" for a in answers if a.failure is not None]

"""A program (`workers/runtime/program.py`): a batch's writes queued as a pipeline queues
them, sent as one EVAL in the settlement's or the begin's transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import ResponseError

from app.keys import Keys
from app.type_stats import count_command
from workers.runtime.outcomes import UPDATE_IF_PRESENT
from workers.runtime.program import Program


def dump(redis: Redis) -> dict[bytes, Any]:
    """Every key, by type, as its contents (a stream's entries without their ids)."""
    found: dict[bytes, Any] = {}
    for key in sorted(redis.keys("*")):
        kind = redis.type(key)
        if kind == b"hash":
            found[key] = redis.hgetall(key)
        elif kind == b"zset":
            found[key] = redis.zrange(key, 0, -1, withscores=True)
        elif kind == b"list":
            found[key] = redis.lrange(key, 0, -1)
        elif kind == b"set":
            found[key] = sorted(redis.smembers(key))
        elif kind == b"stream":
            found[key] = [fields for _, fields in redis.xrange(key)]
        found[key, "ttl"] = redis.ttl(key) > 0
    return found


def writes(commands: Any) -> None:
    """What a settlement queues, of each kind: RQ's command methods, raw commands, and the
    two scripts a program carries."""
    keys = Keys("webhook", "webhooks")
    commands.hset("rq:job:a", mapping={"status": "finished", "meta": b"\x80\x05}"})
    commands.expire("rq:job:a", 500)
    commands.zadd("rq:finished:webhooks", {"a": 1700000000.5})
    commands.xadd("rq:results:a", {"type": 1, "return_value": b"x"}, maxlen=10)
    commands.execute_command("HINCRBY", keys.stats("inbound"), "done", 2)
    commands.execute_command(
        "EVAL", UPDATE_IF_PRESENT, 1, "webhook:event:inbound:a", "status", "done"
    )
    commands.execute_command(
        "EVAL", UPDATE_IF_PRESENT, 1, "webhook:event:inbound:gone", "status", "done"
    )
    commands.execute_command(*count_command(keys, "inbound", "order.created", "done", 2))
    commands.lrem("rq:queue:webhooks", 1, "a")


@pytest.fixture
def make_program(redis: Redis) -> Callable[..., Program]:
    def make(queue: Callable[[Any], None] = writes) -> Program:
        program = Program()
        queue(program)
        return program

    return make


def test_a_program_writes_what_the_same_commands_write_in_a_transaction(
    redis: Redis, make_program: Callable[..., Program]
) -> None:
    def ledger() -> None:
        redis.flushdb()
        redis.hset("webhook:event:inbound:a", "status", "running")
        redis.rpush("rq:queue:webhooks", "a", "b")

    ledger()
    with redis.pipeline() as pipe:
        writes(pipe)
        pipe.execute()
    expected = dump(redis)
    ledger()
    with redis.pipeline() as pipe:
        make_program().queue_on(pipe)
        pipe.execute()

    assert dump(redis) == expected
    # Each carried script did what its EVAL does: counted, and updated only what exists.
    counted = Keys("webhook", "webhooks").type_stats("inbound").encode()
    assert expected[counted] == {b"done:order.created": b"2"}
    assert b"webhook:event:inbound:gone" not in expected


def test_a_failing_command_leaves_the_others_run_and_its_error_is_raised(
    redis: Redis, make_program: Callable[..., Program]
) -> None:
    redis.rpush("a-list", "x")

    def queue(program: Program) -> None:
        program.hset("before", "field", "1")
        program.hset("a-list", "field", "1")  # WRONGTYPE
        program.execute_command("EVAL", UPDATE_IF_PRESENT, 1, "a-list", "field", "1")
        program.hset("after", "field", "1")

    with redis.pipeline() as pipe:
        make_program(queue).queue_on(pipe)
        with pytest.raises(
            ResponseError, match=r"WRONGTYPE.*\(2 of the program's commands failed\)"
        ):
            pipe.execute()
    assert redis.hget("before", "field") == b"1" and redis.hget("after", "field") == b"1"


def test_a_script_a_program_does_not_carry_is_refused(make_program: Callable[..., Program]) -> None:
    with pytest.raises(ValueError, match="a script a program does not carry"):
        make_program(lambda program: program.execute_command("EVAL", "return 1", 0))


def test_an_empty_program_queues_nothing(
    redis: Redis, make_program: Callable[..., Program]
) -> None:
    with redis.pipeline() as pipe:
        make_program(lambda program: None).queue_on(pipe)
        assert len(pipe) == 0

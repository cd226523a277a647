"""A batch's many writes sent as one command: a script that runs them in order.

Begun or settled, a batch of 50 jobs is about 700 commands (RQ's writes for each job, our
meta, ledger and counters). In a transaction redis-py packs each one, Redis answers each
with QUEUED and then with its reply, and redis-py reads and parses every answer: profiled,
that was a third of the worker's CPU per settled event. Queued on a `Program` instead, the
same commands, made by the same code (RQ's own methods take it as their pipeline), go as
the arguments of one EVAL, run in their order by `RUN`, with one reply.

It behaves as the transaction did: the EVAL is queued in the caller's transaction (what it
watches still guards it); a command that fails does not stop the others (each runs in a
protected call), and the first error is raised when the transaction executes, as
redis-py raises a queued command's. A script cannot call EVAL: the scripts our writes use
(the ledger's update, the count by event type) are carried inside `RUN` as functions, and
a program refuses any other. Every key a batch writes is in its queue's slot (on a
cluster, the shard's hash tag), which the EVAL declares with the first key it writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redis.client import Pipeline
from redis.commands.core import CoreCommands

from app.type_stats import COUNT
from workers.runtime.outcomes import UPDATE_IF_PRESENT

# The scripts a program may call, by the name it sends instead of their text.
PROCEDURES = {UPDATE_IF_PRESENT: "update_if_present", COUNT: "count_by_type"}


def _procedure(name: str, text: str) -> str:
    # KEYS and ARGV as parameters: inside, the script reads its own, as EVAL would give them.
    return f"procedures['{name}'] = function(KEYS, ARGV)\n{text}\nend\n"


RUN = (
    "local procedures = {}\n"
    + "".join(_procedure(name, text) for text, name in PROCEDURES.items())
    + """
local first_error, failed, i, n = nil, 0, 1, #ARGV
while i <= n do
  local size = tonumber(ARGV[i])
  local reply
  if ARGV[i + 1] == 'EVAL' then
    local numkeys = tonumber(ARGV[i + 3])
    local keys = {unpack(ARGV, i + 4, i + 3 + numkeys)}
    local args = {unpack(ARGV, i + 4 + numkeys, i + size)}
    local ok, err = pcall(procedures[ARGV[i + 2]], keys, args)
    if not ok then reply = {err = type(err) == 'table' and err.err or tostring(err)} end
  else
    reply = redis.pcall(unpack(ARGV, i + 1, i + size))
  end
  if type(reply) == 'table' and reply.err then
    failed = failed + 1
    first_error = first_error or reply.err
  end
  i = i + size + 1
end
if first_error then
  return redis.error_reply(first_error .. ' (' .. failed .. ' of the program\\'s commands failed)')
end
return #ARGV
"""
)


if TYPE_CHECKING:
    # Typed as the pipeline it stands in for: what RQ's methods are given.
    _Commands = Pipeline
else:
    _Commands = CoreCommands


class Program(_Commands):
    """Redis commands queued as a pipeline queues them (redis-py's command methods, so
    RQ's methods take it as their pipeline), to run as one script."""

    def __init__(self) -> None:
        self.args: list[Any] = []
        self.first_key: Any = None
        self.count = 0

    def execute_command(self, *args: Any, **options: Any) -> Program:
        if args[0] == "EVAL":
            try:
                args = ("EVAL", PROCEDURES[args[1]], *args[2:])
            except KeyError:
                raise ValueError("a script a program does not carry") from None
            key = args[3] if int(args[2]) else None
        else:
            key = args[1] if len(args) > 1 else None
        if self.first_key is None:
            self.first_key = key
        self.args.append(len(args))
        self.args.extend(args)
        self.count += 1
        return self

    def as_eval(self) -> tuple[Any, ...]:
        """The EVAL that runs every command queued here."""
        keys = (1, self.first_key) if self.first_key is not None else (0,)
        return ("EVAL", RUN, *keys, *self.args)

    def queue_on(self, pipe: Pipeline) -> None:
        """The EVAL, on `pipe` (in its transaction)."""
        if self.count:
            pipe.execute_command(*self.as_eval())  # type: ignore[no-untyped-call]

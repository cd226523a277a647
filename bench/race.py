"""The drain against the peer a user would pick for speed, round by round: the bare BRPOP
loop, this worker in each mode (events no handler takes, and events each running one no-op
handler), and dramatiq with 8 threads running a no-op task, each right after the others on
the same Redis, the order turned each round; and the Redis commands each settled event costs
(`INFO commandstats` around one worker's drain, every command the server ran, those inside
scripts included). Alone: `.venv/bin/python bench/run.py --only drain`.
"""

from __future__ import annotations

import statistics
from typing import Any

from redis import Redis

from bench.common import bench_settings, fill
from bench.drain import bare_loop, run_workers, worker_rate
from bench.peers import COMMANDS, install, peer_rate

DRAMATIQ = "dramatiq (8 threads)"
MODES = ("fork", "simple")


def race(redis_url: str, rounds: int, events: int) -> dict[str, Any]:
    python = install()
    peer, command = COMMANDS[DRAMATIQ]
    runs: dict[str, Any] = {
        "bare": lambda: bare_loop(redis_url, events),
        **{mode: (lambda m=mode: worker_rate(redis_url, events, m, 1)) for mode in MODES},
        # Each job runs one no-op handler: dramatiq's no-op task's counterpart.
        **{
            f"{mode}_handler": (lambda m=mode: worker_rate(redis_url, events, m, 1, True))
            for mode in MODES
        },
    }
    if python is not None:
        runs["dramatiq"] = lambda: peer_rate(python, redis_url, events, peer, command)
    rates: list[dict[str, float]] = []
    names = list(runs)
    for n in range(rounds):
        order = names[n % len(names) :] + names[: n % len(names)]
        rates.append({name: runs[name]() for name in order})
    result: dict[str, Any] = {"rounds": rates}
    for mode in (*MODES, *(f"{m}_handler" for m in MODES)):
        result[f"{mode}_over_bare"] = statistics.median(r[mode] / r["bare"] for r in rates)
        if python is not None:
            result[f"{mode}_over_dramatiq"] = statistics.median(
                r[mode] / r["dramatiq"] for r in rates
            )
    result["best"] = max(MODES, key=lambda m: result[f"{m}_over_bare"])
    result["best_handler"] = max(
        (f"{m}_handler" for m in MODES), key=lambda m: result[f"{m}_over_bare"]
    )
    if python is not None:
        result["dramatiq_over_bare"] = statistics.median(r["dramatiq"] / r["bare"] for r in rates)
    else:
        result["dramatiq_skipped"] = "could not install dramatiq into bench/.peers"
    result["commands_per_event"] = {
        **{mode: commands(redis_url, events, mode) for mode in MODES},
        **{f"{mode}_handler": commands(redis_url, events, mode, True) for mode in MODES},
    }
    return result


def commands(redis_url: str, events: int, mode: str, handler: bool = False) -> dict[str, float]:
    """Each Redis command's calls per settled event over one drain (start-up and the fill
    left out): the whole server's, scripts' commands included."""
    connection = Redis.from_url(redis_url)
    connection.flushall()
    fill(bench_settings(redis_url), connection, events, "c")
    connection.config_resetstat()
    run_workers(redis_url, mode, 1, handler)
    stats = connection.info("commandstats")
    per_event = {
        name.removeprefix("cmdstat_"): int(v["calls"]) / events
        for name, v in stats.items()
        if name not in ("cmdstat_info", "cmdstat_config|resetstat")
    }
    per_event = {k: round(v, 2) for k, v in sorted(per_event.items(), key=lambda kv: -kv[1])}
    return {"total": round(sum(per_event.values()), 2), **per_event}

"""The bench's results as the table docs/benchmarks.md shows."""

from __future__ import annotations

from typing import Any


def replica_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (
            "ingest: replica acks N=1 / N=0 (1 replica)",
            f"{r['ratio']:.2f}",
            f"{r['acks1_rps']:.0f} vs {r['acks0_rps']:.0f} req/s",
            "",
        ),
        (
            "  latency p50 / p99 at N=1",
            "",
            f"{r['acks1_p50_us'] / 1000:.1f} / {r['acks1_p99_us'] / 1000:.1f} ms",
            "",
        ),
    ]


def cluster_rows(c: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (
            "ingest: 3-primary cluster / one Redis",
            f"{c['ratio']:.2f}",
            f"{c['cluster_rps']:.0f} vs {c['one_rps']:.0f} req/s",
            "",
        ),
        (
            "  Redis CPU per claim: cluster / one",
            "",
            f"{c['cluster_redis_cpu_us_per_claim']:.0f} / {c['one_redis_cpu_us_per_claim']:.0f} µs",
            "",
        ),
    ]


def race_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The drain against dramatiq-8, round by round, and the commands per settled event."""
    rows = []
    for mode in ("fork", "simple", "fork_handler", "simple_handler"):
        said = mode.replace("_handler", ", one no-op handler")
        rows.append(
            (f"drain race: {said} / bare BRPOP", f"{r[f'{mode}_over_bare']:.2f}", "", ">= 0.80")
        )
    if "dramatiq_over_bare" in r:
        rows.append(
            ("drain race: dramatiq-8 / bare BRPOP", f"{r['dramatiq_over_bare']:.2f}", "", "")
        )
        for best in (r["best"], r["best_handler"]):
            said = best.replace("_handler", ", one no-op handler")
            per_round = ", ".join(f"{x[best] / x['dramatiq']:.2f}" for x in r["rounds"])
            rows.append(
                (
                    f"drain race: {said} / dramatiq-8",
                    f"{r[f'{best}_over_dramatiq']:.2f}",
                    f"rounds {per_round}",
                    ">= 1.00",
                )
            )
    for mode, counted in r["commands_per_event"].items():
        said = mode.replace("_handler", ", one no-op handler")
        rows.append(
            (f"Redis commands per settled event, {said}", "", f"{counted['total']:.1f}", "")
        )
    return rows


def tracing_rows(t: dict[str, Any], result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """On over off and off over off (the noise band), and what the "on" runs exported; in a
    full run, the off figures beside the receiver's and the one-handler drain's rows."""
    i, d, ia, da = t["ingest"], t["drain"], t["ingest_aa"], t["drain_aa"]

    def spread(ratios: list[float]) -> str:
        return f"rounds {min(ratios):.2f}-{max(ratios):.2f}"

    def exported(m: dict[str, Any], item: str, span: str) -> str:
        return (
            f"{m['spans']:,} spans ({m['spans_per_item']:.1f} per {item}, {span}"
            f" {m['items_with_span']:.2f} per {item}) in {m['exports']:,} POSTs,"
            f" {m['export_bytes'] / 1e6:.1f} MB"
        )

    rows = [
        (
            "ingest, tracing on over off",
            f"{i['ratio']:.2f}",
            f"{i['on_rps']:.0f} vs {i['off_rps']:.0f} req/s ({spread(i['ratios'])})",
            "",
        ),
        (
            "  latency p50 / p99, on vs off",
            "",
            f"{i['on_p50_us'] / 1000:.1f} / {i['on_p99_us'] / 1000:.1f} vs"
            f" {i['off_p50_us'] / 1000:.1f} / {i['off_p99_us'] / 1000:.1f} ms",
            "",
        ),
        ("  exported (on)", "", exported(i, "request", "the delivery's span"), ""),
        (
            "ingest, tracing off over off (noise)",
            f"{ia['ratio']:.2f}",
            f"{ia['off_again_rps']:.0f} vs {ia['off_rps']:.0f} req/s ({spread(ia['ratios'])})",
            "",
        ),
        (
            "drain (fork, one handler), tracing on over off",
            f"{d['ratio']:.2f}",
            f"{d['rate']:.0f} vs {d['baseline_rate']:.0f} events/s ({spread(d['ratios'])})",
            "",
        ),
        ("  exported (on)", "", exported(d, "event", "the attempt's span"), ""),
        (
            "drain (fork, one handler), off over off (noise)",
            f"{da['ratio']:.2f}",
            f"{da['rate']:.0f} vs {da['baseline_rate']:.0f} events/s ({spread(da['ratios'])})",
            "",
        ),
    ]
    if "ingest" in result:  # tracing off is the code path of the rows above
        rows.append(
            (
                "  off beside the rows above",
                "",
                f"ingest {i['off_rps']:.0f} req/s (receiver row"
                f" {result['ingest']['receiver_rps']:.0f}), drain {d['baseline_rate']:.0f}"
                f" events/s (one-handler row {result['drain_handler']['rate']:.0f})",
                "",
            )
        )
    return rows


def table(result: dict[str, Any]) -> str:
    if "ingest" not in result:  # one measure alone (--only)
        rows = replica_rows(result["replicas"]) if "replicas" in result else []
        if "cluster" in result:
            rows += cluster_rows(result["cluster"])
        if "tracing" in result:
            rows += tracing_rows(result["tracing"], result)
        if "race" in result:
            rows += race_rows(result["race"])
        return _format(rows)
    i, m = result["ingest"], result["memory"]
    rows = [
        (
            "ingest: receiver / no-op endpoint",
            f"{i['ratio']:.2f}",
            f"{i['receiver_rps']:.0f} vs {i['noop_rps']:.0f} req/s",
            ">= 0.75",
        ),
        (
            "  latency p99 receiver / no-op",
            f"{i['receiver_p99_us'] / i['noop_p99_us']:.1f}x",
            f"{i['receiver_p99_us'] / 1000:.1f} / {i['noop_p99_us'] / 1000:.1f} ms",
            "<= 2x",
        ),
        (
            "  latency p50 receiver / no-op",
            "",
            f"{i['receiver_p50_us'] / 1000:.1f} / {i['noop_p50_us'] / 1000:.1f} ms",
            "",
        ),
    ]
    for key, label, target in (
        ("drain", "drain: worker (default, isolated) / bare BRPOP", ">= 0.50"),
        ("drain_simple", "drain: worker (in-process) / bare BRPOP", ">= 0.70"),
        ("drain_handler", "drain: worker, one no-op handler / bare BRPOP", ""),
    ):
        d = result[key]
        rows.append(
            (
                label,
                f"{d['ratio']:.2f}",
                f"{d['rate']:.0f} vs {d['baseline_rate']:.0f} events/s",
                target,
            )
        )
    s = result["scaling"]
    rows.append(
        (
            "drain: 2 worker processes / 1",
            f"{s['ratio']:.2f}",
            f"{s['rate']:.0f} vs {s['baseline_rate']:.0f} events/s",
            ">= 1.7",
        )
    )
    for name, p in result["peers"].items():
        if name == "skipped":
            rows.append(("peers", "", p, ""))
            continue
        rows.append(
            (
                f"drain: {name} / bare BRPOP",
                f"{p['ratio']:.2f}",
                f"{p['rate']:.0f} vs {p['baseline_rate']:.0f} events/s",
                "",
            )
        )
    rows += [
        ("memory: one dedupe key (used_memory)", "", f"{m['dedupe_key_bytes']:.0f} B", ""),
        (
            "memory: one accepted event, beyond its payload",
            "",
            f"{m['beyond_payload_bytes']:.0f} B (payload {m['payload_bytes']} B, once)",
            "<= 1 KB",
        ),
        (
            "memory: one settled event, RQ's result kept",
            "",
            f"{m['settled_event_bytes']:.0f} B",
            "",
        ),
        (
            "memory: one event after RQ's result TTL",
            "",
            f"{m['kept_event_bytes']:.0f} B (ledger, index, dedupe key)",
            "",
        ),
    ]
    if "events_page" in result:
        page = result["events_page"]
        # Found by its ending: what the page shows as opened is in the name, and changes.
        [opened] = [m for n, m in page["measures"].items() if n.endswith("(the page as opened)")]
        slowest = max(m["p95_ms"] for m in page["measures"].values())
        rows.append(
            (
                f"events page, {page['records']:,} records: as opened",
                "",
                f"{opened['median_ms']} ms (p95 {opened['p95_ms']}, slowest p95 {slowest})",
                f"<= {page['target_ms']:.0f} ms",
            )
        )
    if "events_front" in result:
        front = result["events_front"]
        [opened] = [m for n, m in front["measures"].items() if n.endswith("(as opened)")]
        slowest = max(m["p95_ms"] for m in front["measures"].values())
        rows.append(
            (
                f"events page of {front['shards']} shards, {front['records']:,}: as opened",
                "",
                f"{opened['median_ms']} ms (p95 {opened['p95_ms']}, slowest p95 {slowest})",
                f"<= {front['target_ms']:.0f} ms",
            )
        )
    if "race" in result:
        rows += race_rows(result["race"])
    if "replicas" in result:
        rows += replica_rows(result["replicas"])
    if "cluster" in result:
        rows += cluster_rows(result["cluster"])
    if "tracing" in result:
        rows += tracing_rows(result["tracing"], result)
    return _format(rows)


def _format(rows: list[tuple[str, str, str, str]]) -> str:
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measure':<{width}}  {'ratio':>6}  {'figures':<34}  target"]
    lines += [f"{a:<{width}}  {b:>6}  {c:<34}  {t}" for a, b, c, t in rows]
    return "\n".join(lines)

"""The report's Requests section (``requests``) as document blocks; kept apart from ``render.content``
(which calls these) so that the section grows here without touching the shared module."""

from __future__ import annotations

from typing import Any

from logscope.render.content import num, pct
from logscope.render.doc import Block, Cell, Heading, Para, Table, b, c, prose, t

LATENCY_TITLES = {"e2e_s": "end-to-end", "ttft_s": "time to first token", "queue_s": "queue time"}


def _status_words(by: dict[str, int]) -> str:
    return ", ".join(f"{n:,}x {s}" for s, n in sorted(by.items()))


def requests_summary(r: Any) -> str:
    """One line for the report's summary table: only what the log can count."""
    parts = []
    if r.inference_requests is not None:
        parts.append(
            f"{num(r.inference_requests)} inference requests in the access log ({_status_words(r.by_status)}"
            f"; HTTP errors {pct(r.http_error_rate_pct)})"
        )
    if r.logged_requests is not None:
        parts.append(
            f"{num(r.logged_requests)} request ids logged ({_status_words(r.outcomes)}; aborted "
            f"{pct(r.abort_rate_pct)})"
        )
    if r.in_flight_max is not None:
        parts.append(f"up to {num(r.in_flight_max)} in flight (running + waiting)")
    lat = r.latency.get("e2e_s")
    if lat is not None:
        parts.append(f"e2e P50/P95/P99 {num(lat.p50)}/{num(lat.p95)}/{num(lat.p99)} s")
    return "; ".join(parts)


def requests_blocks(r: Any, level: int) -> list[Block]:
    kv: list[tuple[Cell, ...]] = []
    if r.inference_requests is not None:
        kv.append(
            (
                (b("Inference requests"),),
                (t(f"{num(r.inference_requests)} access lines: {_status_words(r.by_status) or 'none'}"),),
            )
        )
        kv.append(
            (
                (b("HTTP error rate"),),
                (
                    t(
                        f"{pct(r.http_error_rate_pct)} (4xx + 5xx), server errors (5xx) "
                        f"{pct(r.server_error_rate_pct)}"
                    ),
                ),
            )
        )
        if r.probes:
            kv.append(
                (
                    (b("Probes, not counted"),),
                    (c(", ".join(f"{k}: {v}" for k, v in list(r.probes.items())[:8])),),
                )
            )
    else:
        kv.append(((b("Access log"),), (t("no access line: HTTP statuses unknown"),)))
    if r.logged_requests is not None:
        kv.append(
            (
                (b("Request logging"),),
                (
                    t(
                        f"{num(r.logged_requests)} request ids: "
                        f"{_status_words(r.outcomes)}; aborted {pct(r.abort_rate_pct)}, failed "
                        f"{pct(r.failure_rate_pct)}"
                    ),
                ),
            )
        )
    else:
        kv.append(((b("Request logging"),), (t("off: aborts and failures unknown"),)))
    if r.metrics_finished_by_reason:
        kv.append(
            (
                (b("Server counter"),),
                (
                    t(
                        ", ".join(f"{k}: {num(v)}" for k, v in sorted(r.metrics_finished_by_reason.items()))
                        + f"; error {pct(r.metrics_error_rate_pct)}, abort "
                        f"{pct(r.metrics_abort_rate_pct)} (--metrics)"
                    ),
                ),
            )
        )
    if r.in_flight_max is not None:
        kv.append(
            (
                (b("In flight"),),
                (
                    t(
                        f"up to {num(r.in_flight_max)} (running + waiting) over "
                        f"{len(r.in_flight)} lines; {r.in_flight_source}"
                    ),
                ),
            )
        )
    else:
        kv.append(((b("In flight"),), (t("unknown: "), *prose(r.in_flight_not_applicable or ""))))
    if not r.latency:
        kv.append(((b("Latency"),), (t("unknown: "), *prose(r.latency_not_applicable or ""))))
    out: list[Block] = [Table(("", ""), kv, key_value=True)]
    if r.latency:
        rows: list[tuple[Cell, ...]] = [
            (
                (t(LATENCY_TITLES.get(k, k)),),
                (t(num(s.count)),),
                (t(num(s.mean)),),
                (t(num(s.p50)),),
                (t(num(s.p90)),),
                (t(num(s.p95)),),
                (t(num(s.p99)),),
                (t(num(s.max)),),
                (t(s.source),),
            )
            for k, s in r.latency.items()
        ]
        out.append(Heading(3, (t("Latency printed per request (s)"),), "requests-latency"))
        out.append(
            Table(
                ("latency", "count", "mean", "P50", "P90", "P95", "P99", "max", "source"),
                rows,
                (False, True, True, True, True, True, True, True, False),
            )
        )
    out.append(Para((b("Method: "), *prose(r.method)), "method"))
    return out

"""The report's Metrics section (``analyze --metrics``, ``logscope metrics``) as document blocks.

Kept apart from ``render.content`` (which calls ``metrics_blocks`` for the section) so that the
section's tables grow here without touching the shared module.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from logscope.render.content import JSON_HINT, LEVELS, ROWS, num, pct
from logscope.render.doc import Block, Cell, Heading, Para, Table, b, c, prose, t

LATENCY_TITLES = {
    "ttft_s": "TTFT",
    "itl_s": "inter-token latency",
    "tpot_s": "TPOT (per request)",
    "e2e_s": "end-to-end",
    "queue_s": "queue time",
}


def _ms(x: float | None) -> str:
    return "n/a" if x is None else num(1000.0 * x)


def _when(x: float | None) -> str:
    return "n/a" if x is None else datetime.fromtimestamp(x, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def metrics_summary(m: Any) -> str:
    """One line for the report's summary table."""
    parts = [f"{m.scrapes} scrape(s)"]
    if m.preemptions is not None:
        parts.append(f"{num(m.preemptions.total)} preemptions ({m.preemptions.source.split(' in the ')[0]})")
    ttft = m.histograms.get("ttft_s")
    if ttft is not None and ttft.over_run.count:
        q = ttft.over_run
        shown = [
            (
                f"≤ {_ms(q.first_bucket_s)}"
                if n in q.in_first_bucket
                else f"≥ {_ms(v)}"
                if n in q.in_inf_bucket
                else _ms(v)
            )
            for n, v in (("p50", q.p50), ("p95", q.p95), ("p99", q.p99))
        ]
        parts.append(f"TTFT P50/P95/P99 {'/'.join(shown)} ms over {num(q.count)} requests")
    cc = m.cross_check
    if cc is not None:
        parts.append(
            f"log vs counter generation rate: {cc.inconsistent} of {len(cc.checks)} windows inconsistent"
        )
    idle = getattr(m, "idle_ttft", None)
    if idle is not None and idle.gaps:
        parts.append(
            f"TTFT after idle: {idle.slow_gaps} of {len(idle.gaps)} idle gap(s) followed by slow first tokens"
        )
    return "; ".join(parts)


def metrics_blocks(m: Any, level: int) -> list[Block]:
    out: list[Block] = []
    kv: list[tuple[Cell, ...]] = [
        ((b("Scrapes"),), (t(f"{m.scrapes}, {_when(m.first_scrape)} to {_when(m.last_scrape)}"),)),
    ]
    if m.preemptions is not None:
        kv.append(
            (
                (b("Preemptions"),),
                (t(f"{num(m.preemptions.total)} (source: "), c(m.preemptions.source), t(")")),
            )
        )
    for role, label in (
        ("generation_tokens", "Generation tokens"),
        ("prompt_tokens", "Prompt tokens"),
        ("requests_finished", "Requests finished"),
    ):
        ct = m.counters.get(role)
        if ct is not None:
            rates = [i.rate_per_s for i in ct.intervals if i.increase > 0]
            peak = f", peak {num(max(rates))}/s between scrapes" if rates else ""
            kv.append(((b(label),), (t(f"{num(ct.total)} since start{peak}"),)))
    acc, drafted = m.counters.get("spec_accepted_tokens"), m.counters.get("spec_draft_tokens")
    if acc is not None and drafted is not None and drafted.total > 0:
        kv.append(
            (
                (b("Spec decode"),),
                (
                    t(
                        f"{num(acc.total)} of {num(drafted.total)} drafted tokens accepted "
                        f"({pct(100.0 * acc.total / drafted.total)})"
                    ),
                ),
            )
        )
    hits, queries = m.counters.get("prefix_cache_hits"), m.counters.get("prefix_cache_queries")
    if hits is not None and queries is not None and queries.total > 0:
        kv.append(
            (
                (b("Prefix cache"),),
                (
                    t(
                        f"{num(hits.total)} of {num(queries.total)} queried tokens hit "
                        f"({pct(100.0 * hits.total / queries.total)})"
                    ),
                ),
            )
        )
    for role, label in (("running", "Running"), ("waiting", "Waiting"), ("kv_usage_pct", "KV usage %")):
        g = m.gauges.get(role)
        if g is not None:
            kv.append(
                (
                    (b(label),),
                    (t(f"max {num(g.max)}, mean {num(g.mean)} over the scrapes, last {num(g.last)}"),),
                )
            )
    out.append(Table(("", ""), kv, key_value=True))
    if m.histograms:
        rows: list[tuple[Cell, ...]] = []
        for role, h in m.histograms.items():
            q = h.over_run

            def cell(name: str, v: float | None, q: Any = q) -> Cell:
                # in the lowest bucket the interpolation says only "at most its bound"; in +Inf "at least the top one"
                if name in q.in_first_bucket:
                    return (t(f"≤ {_ms(q.first_bucket_s)}"),)
                return (t(f"≥ {_ms(v)}" if name in q.in_inf_bucket else _ms(v)),)

            rows.append(
                (
                    (t(LATENCY_TITLES.get(role, role)),),
                    (c(h.family),),
                    (t(num(q.count)),),
                    (t(_ms(q.mean)),),
                    cell("p50", q.p50),
                    cell("p90", q.p90),
                    cell("p95", q.p95),
                    cell("p99", q.p99),
                )
            )
        out.append(Heading(3, (t("Latency over the run (ms)"),), "metrics-latency"))
        out.append(
            Table(
                ("latency", "family", "count", "mean", "P50", "P90", "P95", "P99"),
                rows,
                (False, False, True, True, True, True, True, True),
            )
        )
        out.append(
            Para(
                prose(
                    "Quantiles from the histograms' buckets (linear within a bucket, as Prometheus' "
                    "histogram_quantile); '≤ x': the quantile falls in the lowest bucket, whose upper bound x "
                    "is all the buckets say; '≥ x': it falls in +Inf, above the highest finite bound x; the "
                    "mean is exact (sum / count)."
                ),
                "note",
            )
        )
    out += _idle_blocks(getattr(m, "idle_ttft", None), getattr(m, "idle_ttft_not_applicable", None))
    cc = m.cross_check
    if cc is not None:
        out.append(Heading(3, (t("Log against metrics: generation throughput"),), "metrics-cross-check"))
        span = "n/a" if cc.span_diff_pct is None else f"{cc.span_diff_pct:+.1f} %"
        rated = getattr(cc, "rated", 0)
        within = (
            f"{cc.within_10_pct} of {rated} with a rate within 10 % of the log's "
            f"({cc.within_10_pct_interpolated} with the counter read linearly between scrapes), "
            f"{cc.beyond_allowed} beyond the difference their ends' mismatch allows; "
            + (
                f"read linearly, {cc.within_10_pct_enough} of the {cc.enough_tokens} window(s) holding at least "
                f"{num(cc.min_window_tokens)} tokens within 10 % (stamps to {num(cc.stamp_resolution_s)} s); "
                if cc.min_window_tokens is not None
                else ""
            )
            if rated
            else ""
        )
        out.append(
            Para(
                prose(
                    f"{len(cc.checks)} stats window(s): {within}the largest difference {pct(cc.max_abs_diff_pct)}, "
                    f"{cc.inconsistent} window(s) the scrapes cannot produce; over the whole span the log's "
                    f"{num(cc.span_log_tokens)} tokens against the counter's {num(cc.span_metrics_tokens)} ({span}). "
                    f"Clock: {cc.alignment}."
                ),
                "warn" if cc.inconsistent else "p",
            )
        )
        limit = ROWS[min(level, LEVELS - 1)]
        if limit:
            rows = [
                (
                    (c(ck.log_line),),
                    (t(f"{_when(ck.window_start)[11:19]}-{_when(ck.window_end)[11:19]}"),),
                    (t(num(ck.log_gen_tok_s)),),
                    (t(num(ck.metrics_gen_tok_s)),),
                    (t(f"{num(ck.metrics_min_tok_s)}-{num(ck.metrics_max_tok_s)}"),),
                    (t("n/a" if ck.diff_pct is None else f"{ck.diff_pct:+.1f} %"),),
                    (t("n/a" if ck.allowed_pct is None else f"±{num(ck.allowed_pct)} %"),),
                    (t(num(ck.consistent)),),
                )
                for ck in cc.checks[:limit]
            ]
            out.append(
                Table(
                    (
                        "stats line",
                        "window (UTC)",
                        "log tok/s",
                        "metrics tok/s",
                        "scrapes allow",
                        "diff",
                        "mismatch allows",
                        "consistent",
                    ),
                    rows,
                    (False, False, True, True, False, True, True, False),
                )
            )
            if len(cc.checks) > limit:
                out.append(
                    Para(
                        prose(f"Showing {limit} of {len(cc.checks)} windows; all are in {JSON_HINT}."), "note"
                    )
                )
        out.append(Para((b("Method: "), *prose(cc.method)), "method"))
    for note in m.notes[:20]:
        out.append(Para(prose(f"Note: {note}"), "warn"))
    if len(m.notes) > 20:
        out.append(Para(prose(f"{len(m.notes) - 20} more notes in {JSON_HINT}."), "note"))
    if m.other_families:
        out.append(
            Para(
                prose(
                    f"{len(m.other_families)} other families read and not analysed (listed in "
                    f"{JSON_HINT}, key other_families)."
                ),
                "note",
            )
        )
    out.append(Para((b("Method: "), *prose(m.method)), "method"))
    return out


def slo_blocks(s: Any, level: int) -> list[Block]:
    rows: list[tuple[Cell, ...]] = []
    for ck in s.checks:
        if ck.measured is None:
            value = "unknown"
        else:
            value = num(ck.measured, ck.unit)
            value = {"at_most": "≤ ", "at_least": "≥ "}.get(ck.bound or "", "") + value
        rows.append(((c(ck.gate),), (t(value),), (t(ck.status),), (t(ck.source or "none"),)))
    out: list[Block] = [Table(("gate", "measured", "verdict", "source"), rows, (False, True, False, False))]
    verdict = (
        "All gates passed."
        if s.passed
        else f"{s.failed} gate(s) failed, {s.unknown} unknown (unknown is not a pass)."
    )
    out.append(Para(prose(verdict), "p" if s.passed else "warn"))
    out.append(Para((b("Method: "), *prose(s.method)), "method"))
    return out


def _idle_blocks(idle: Any, why: str | None) -> list[Block]:
    """TTFT right after each idle gap of the scrapes, against the run's median."""
    if idle is None:
        return [Para(prose(f"TTFT after idle: not applicable ({why})."), "note")] if why else []
    head = Heading(3, (t("TTFT right after idle"),), "metrics-idle-ttft")
    if not idle.gaps:
        return [head, Para(prose(f"No idle gap in the scrapes. Method: {idle.method}."), "note")]
    lines = []
    for g in idle.gaps:
        what = (
            "no first token after it"
            if g.ttft_mean_after_s is None
            else f"{num(g.requests_after)} first token(s) right after, mean TTFT {_ms(g.ttft_mean_after_s)} ms"
            + ("" if g.ratio_to_p50 is None else f" ({num(g.ratio_to_p50)}x the run's median)")
            + (": SLOW" if g.slow else "")
        )
        start = "from the first scrape " if g.from_first_scrape else ""
        lines.append(f"{_when(g.start)[11:19]}-{_when(g.end)[11:19]} ({start}{num(g.idle_s)} s idle): {what}")
    p50 = "unknown" if idle.run_ttft_p50_s is None else f"{_ms(idle.run_ttft_p50_s)} ms"
    text = (
        f"{idle.slow_gaps} of {len(idle.gaps)} idle gap(s) followed by slow first tokens; run median TTFT {p50}. "
        + "; ".join(lines)
        + f". Method: {idle.method}."
    )
    return [head, Para(prose(text), "warn" if idle.slow_gaps else "p")]

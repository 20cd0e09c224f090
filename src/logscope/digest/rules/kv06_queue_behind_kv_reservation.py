"""KV06: SGLang kept requests queued because its KV pool could not hold their reservations."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules.kv05_kv_cache_saturated import FULL_PCT

MIN_LINES = 5  # consecutive Decode batch lines with a queue: 200 decode steps at the default interval
MAX_RUNNING_SHARE = 0.5  # running at most this share of max_running_requests: the batch limit was not it


@register
class QueueBehindKvReservation(Rule):
    """SGLang kept requests queued with few running: the KV pool could not hold their reservations.

    What
        SGLang's ``Decode batch`` lines print the running requests, the queue (``#queue-req``) and
        the KV token usage. The rule fires when 5 or more consecutive decode lines of one DP group
        show a queue while the running count did not grow and stayed at half of
        ``max_running_requests`` or less, with the KV usage below full (a full cache is KV05's).
        It names the pool's size, the running count, the longest queue, and the client's TTFT when
        its output is given (``--bench``).

    Why
        SGLang admits a waiting request only when the pool can hold its prompt plus the output it
        reserves for it (``max_new_tokens`` scaled by ``--schedule-conservativeness``); the
        reservation is not in ``token usage``, so the cache looks half empty while nobody gets in.
        Concurrency is then set by the KV pool, not by the batch limit or the client, and every
        queued request's TTFT grows by whole request lifetimes (the 0.5.23 corpus run: 2 running,
        22 queued, P99 TTFT 181 s).

    Fix
        Give the KV pool more tokens (``--mem-fraction-static``, ``--max-total-tokens``, an FP8 KV
        cache, more GPUs) or ask for shorter outputs (``max_new_tokens``); a lower
        ``--schedule-conservativeness`` admits more at the risk of retractions when outputs do run
        long.

    References
        - SGLang ``Decode batch`` line (``#running-req``, ``token usage``, ``#queue-req``): formats reference 3.1
        - SGLang server args ``max_total_tokens``, ``mem_fraction_static``, ``schedule_conservativeness``
        - corpus run sglang-0.5.23 c1_kv_tight_queue (``--max-total-tokens 6144``)
    """

    code = "KV06"
    slug = "queue-behind-kv-reservation"
    title = "Requests queued behind the KV pool's reservations"
    severity = "warning"
    confidence = "inferred"
    kinds = ("decode_batch",)
    engines = ("sglang",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        kv = ctx.analysis("kv_pool")
        cap = getattr(kv, "max_running_requests", None)
        tokens = getattr(kv, "tokens", None)
        groups = _groups(ctx)
        best = groups[0].clear()
        for lines in groups:
            for lo, hi in _queued_runs(lines, cap):
                if hi - lo > best.height:
                    best = lines.slice(lo, hi - lo)
        if best.height < MIN_LINES:
            return []
        seqs = best["seq"]
        first, last = ctx.events[seqs[0]], ctx.events[seqs[-1]]
        worst = ctx.events[seqs[best["queue"].arg_max() or 0]]  # the first line with the longest queue
        running = sorted(set(best["running"].to_list()))
        top = max(best["usage"].fill_null(0.0).to_list())
        ran = f"{running[0]}" if len(running) == 1 else f"{running[0]}-{running[-1]}"
        msg = (
            f"Requests queued in {len(best)} consecutive Decode batch lines (lines {first.line}-{last.line}, up to "
            f"{getattr(worst, 'queue', 0)} queued at line {worst.line}) while only {ran} ran"
            + (f" (max_running_requests {cap:,})" if cap else "")
            + f" and the KV token usage stayed at most {top:.0f} %"
            + (f" of the {tokens:,}-token pool" if tokens else "")
            + ": SGLang admits a request only when the pool can hold its prompt plus the output it reserves for it, "
            "so the KV pool, not the batch limit, set the concurrency."
        )
        bench = [e for _i, e in ctx.of_kind("bench_result")]
        ttft = next(
            (e for e in bench if getattr(e, "p99_ttft_ms", None) or getattr(e, "mean_ttft_ms", None)), None
        )
        if ttft is not None:
            p99, mean = getattr(ttft, "p99_ttft_ms", None), getattr(ttft, "mean_ttft_ms", None)
            parts = [f"mean {mean / 1000:,.1f} s" if mean else "", f"P99 {p99 / 1000:,.1f} s" if p99 else ""]
            msg += f" The client's TTFT: {', '.join(p for p in parts if p)} (line {ttft.line})."
        fix = (
            "Give the KV pool more tokens (`--mem-fraction-static`, `--max-total-tokens`"
            + (f", now {tokens:,}" if tokens else "")
            + ", an FP8 KV cache, more GPUs) or ask for shorter outputs (`max_new_tokens`); a lower "
            "`--schedule-conservativeness` admits more at the risk of retractions when outputs run long."
        )
        evidence: list[EvidenceItem] = [first, worst, last]
        if ttft is not None:
            evidence.append(ttft)
        return [self.finding(msg, fix, [first], evidence)]


def _groups(ctx: Context) -> list[pl.DataFrame]:
    """Decode lines per DP group, one TP rank's copy of each (the group's lowest rank), in run order:
    ``seq``, ``queue`` and ``running`` (0 when not printed), ``usage`` (KV token usage, %)."""
    df = ctx.frame("decode_batch").select(
        "seq",
        pl.col("dp_rank").fill_null(0).alias("dp"),
        pl.col("tp_rank").alias("tp"),
        pl.col("queue").fill_null(0).alias("queue"),
        pl.col("running").fill_null(0).alias("running"),
        (pl.col("token_usage") * 100).alias("usage"),
    )
    tp = pl.col("tp")
    df = df.filter(tp.is_null() | (tp == tp.min().over("dp")))
    return df.partition_by("dp", maintain_order=True) or [df]


def _queued_runs(lines: pl.DataFrame, cap: int | None) -> list[tuple[int, int]]:
    """Runs of consecutive lines with a queue, few running, no growth in running, KV below full, as
    (first, end) row ranges of ``lines``."""
    usage, running = pl.col("usage"), pl.col("running")
    queued = (pl.col("queue") > 0) & (running > 0) & (usage.is_null() | (usage < FULL_PCT))
    if cap:
        queued &= running <= MAX_RUNNING_SHARE * cap
    ok = lines.select(queued.alias("ok"))["ok"].to_list()
    counts = lines["running"].to_list()
    runs: list[tuple[int, int]] = []
    start = -1  # the current run's first row (-1: none)
    for k, (q, n) in enumerate(zip(ok, counts, strict=True)):
        if q and start >= 0 and n <= counts[start]:
            continue  # the run goes on: the running count did not grow past its first line's
        if start >= 0:
            runs.append((start, k))
        start = k if q else -1
    if start >= 0:
        runs.append((start, len(ok)))
    return runs

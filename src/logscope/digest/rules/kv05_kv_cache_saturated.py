"""KV05: the KV cache stayed full while requests waited."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from logscope.analyses.kvsat import FULL_PCT as FULL_EPISODE_PCT
from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register

FULL_PCT = 98.0  # KV usage taken as full
MIN_WINDOWS = 2  # a pattern, not one window


@register
class KvCacheSaturated(Rule):
    """The KV cache was full while requests waited to be admitted.

    What
        The engines' periodic lines print the KV cache usage next to the queue: vLLM ``GPU KV cache
        usage: P%`` with ``Waiting: N reqs`` (V0: ``Pending: N reqs``), SGLang ``token usage: F`` with
        ``#queue-req: N``. The rule fires when two or more such lines show the cache 98 % full or
        more while requests waited. The message names the longest saturation episode (report key
        ``kv_saturation``: 3 or more consecutive windows at 95 % or more), so one symptom gives one finding.

    Why
        With the KV cache full the engine cannot admit anyone: requests wait (TTFT grows), and
        running requests that need one more block are preempted or retracted. Concurrency is then
        set by the KV cache, not by compute or by the batch limit, and throughput per GPU stops
        growing with load.

    Fix
        Give the KV cache more room (``--gpu-memory-utilization`` / ``--mem-fraction-static``, FP8 KV
        cache, more GPUs), shorten requests (``--max-model-len``, output limits), or send less load;
        prefix caching helps when prompts share a prefix.

    References
        - vLLM stats logger (``GPU KV cache usage``); SGLang ``Decode batch`` (``token usage``)
    """

    code = "KV05"
    slug = "kv-cache-saturated"
    title = "KV cache full while requests waited"
    severity = "info"
    confidence = "observed"
    kinds = ("throughput", "decode_batch", "prefill_batch")

    def check(self, ctx: Context) -> Iterable[Finding]:
        lines = _kv_lines(ctx)
        full = lines.filter((pl.col("pct") >= FULL_PCT) & (pl.col("waiting") > 0))
        if full.height < MIN_WINDOWS:
            return []
        top = full.sort(["waiting", "pct", "seq"], descending=[True, True, False]).row(0, named=True)
        worst = ctx.events[top["seq"]]  # most waiting, then fullest; the first such line
        total = lines.height
        msg = (
            f"The KV cache was {FULL_PCT:g} % full or more while requests waited in {full.height} of {total} lines "
            f"(most waiting at line {worst.line}: {top['waiting']} waiting, {getattr(worst, 'running', 0)} running, "
            f"KV {top['pct']:.1f} % full): the KV cache, not compute, set the concurrency."
        )
        episodes = ctx.analysis("kv_saturation") or []
        if (
            episodes
        ):  # the longest span of consecutive full windows (logscope.analyses.kvsat): one finding, not two
            ep = max(episodes, key=lambda x: x.windows)
            msg += (
                f" Longest saturation episode: {ep.windows} consecutive windows with KV usage {FULL_EPISODE_PCT:g} % "
                f"or more (peak {ep.max_usage_pct:g} %), lines {ep.start_line}-{ep.end_line}"
                + (" (the log ends in it)." if ep.until_end else ".")
            )
        fix = (
            "Give the KV cache more room (`--gpu-memory-utilization` / `--mem-fraction-static`, FP8 KV cache, more "
            "GPUs), shorten requests, or send less load."
        )
        seqs = full["seq"]
        evidence: list[EvidenceItem] = [worst, ctx.events[seqs[0]], ctx.events[seqs[-1]]]
        return [self.finding(msg, fix, evidence=evidence, rows=full)]


def _kv_lines(ctx: Context) -> pl.DataFrame:
    """The periodic lines that print the KV usage, in run order: ``seq``, ``pct`` (KV usage, %),
    ``waiting`` (vLLM ``Waiting``/``Pending``, SGLang ``#queue-req``; 0 when not printed) and the
    columns a finding counts ranks from."""
    keep = ("seq", "repeated", "tp_rank", "dp_rank", "process")
    parts = [  # a kind the run lacks gives an empty frame with its columns
        ctx.frame("throughput").select(
            *keep,
            pl.col("gpu_kv_cache_pct").alias("pct"),
            pl.col("waiting").fill_null(0).alias("waiting"),
        ),
        *(
            ctx.frame(kind).select(
                *keep,
                (pl.col("token_usage") * 100).alias("pct"),
                pl.col("queue").fill_null(0).alias("waiting"),
            )
            for kind in ("decode_batch", "prefill_batch")
        ),
    ]
    return pl.concat(parts).filter(pl.col("pct").is_not_null()).sort("seq")

"""KV05: the KV cache stayed full while requests waited."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.analyses.kvsat import FULL_PCT as FULL_EPISODE_PCT
from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.events import Event

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
        full: list[tuple[Event, float, int]] = []
        for _i, e in ctx.of_kind("throughput", "decode_batch", "prefill_batch"):
            pct, waiting = _usage_pct(e), _waiting(e)
            if pct is not None and pct >= FULL_PCT and waiting > 0:
                full.append((e, pct, waiting))
        if len(full) < MIN_WINDOWS:
            return []
        worst = max(full, key=lambda x: (x[2], x[1]))
        total = len(
            [
                1
                for _i, e in ctx.of_kind("throughput", "decode_batch", "prefill_batch")
                if _usage_pct(e) is not None
            ]
        )
        msg = (
            f"The KV cache was {FULL_PCT:g} % full or more while requests waited in {len(full)} of {total} lines "
            f"(most waiting at line {worst[0].line}: {worst[2]} waiting, {getattr(worst[0], 'running', 0)} running, "
            f"KV {worst[1]:.1f} % full): the KV cache, not compute, set the concurrency."
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
        events = [e for e, _p, _w in full]
        evidence: list[EvidenceItem] = [worst[0], events[0], events[-1]]
        return [self.finding(msg, fix, events, evidence)]


def _usage_pct(e: Event) -> float | None:
    if e.kind == "throughput":
        v = getattr(e, "gpu_kv_cache_pct", None)
        return float(v) if v is not None else None
    v = getattr(e, "token_usage", None)
    return float(v) * 100 if v is not None else None


def _waiting(e: Event) -> int:
    v = getattr(e, "waiting", None) if e.kind == "throughput" else getattr(e, "queue", None)
    return int(v or 0)

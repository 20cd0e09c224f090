"""KV03: fewer full-length requests fit in the KV pool than the load asked for."""

from __future__ import annotations

import math
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.events import Event

KV_PRESSURE_PCT = 80.0  # KV usage at which waiting requests are taken to wait for KV space


@register
class ConcurrencyBelowLoad(Rule):
    """The KV pool fits fewer full-length requests than the load the engine was given.

    What
        vLLM prints ``Maximum concurrency for L tokens per request: X x``: how many requests of the
        full ``--max-model-len`` fit in the KV pool at once. The rule compares X with the load: the
        most requests running plus waiting in one stats line (and the client's
        ``Maximum request concurrency`` when its result block is in the log). When X is below the
        load, it says so, and whether requests actually queued while the KV cache was nearly full
        (usage of 80 % or more), which shows the pool, not the batch limit, set the concurrency.

    Why
        Concurrency is capped by the pool whenever requests grow towards the maximum length: at most
        floor(X) of them can run, the rest wait (TTFT grows) or are preempted. The printed X assumes
        every request reaches ``--max-model-len``; with ``--max-model-len`` far above the real need,
        X understates what fits, and engines that reserve for the full length at admission admit
        that few. In the Kimi-K3 case 2.69x at 1,000,000 tokens met a load of 10 requests.

    Fix
        Set ``--max-model-len`` to the longest request you really serve, so that the pool is sized
        and reported for it; otherwise give the KV cache more memory (``--gpu-memory-utilization``,
        ``--kv-cache-memory-bytes``, more GPUs), or lower the load (``--max-num-seqs``, client
        concurrency).

    References
        - vLLM ``kv_cache_utils._report_kv_cache_config`` (``Maximum concurrency for ...``)
        - docs/design CASE: Kimi-K3, "KV pool sizing"
    """

    code = "KV03"
    slug = "concurrency-below-load"
    title = "Fewer full-length requests fit in the KV pool than the load"
    severity = "warning"
    confidence = "inferred"
    kinds = ("max_concurrency",)
    engines = ("vllm",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        conc_events = [e for _i, e in ctx.of_kind("max_concurrency")]
        line = conc_events[-1]
        x = float(getattr(line, "concurrency", 0.0))
        length = int(getattr(line, "tokens_per_request", 0))
        if x < 1.0:
            return []  # KV02: not even one request fits
        stats = [e for _i, e in ctx.of_kind("throughput")]
        peak: Event | None = max(stats, key=lambda e: _load(e), default=None)
        load = _load(peak) if peak is not None else 0
        bench = [e for _i, e in ctx.of_kind("bench_result") if getattr(e, "max_concurrency", None)]
        client = max((int(getattr(e, "max_concurrency", 0)) for e in bench), default=0)
        if max(load, client) <= x:
            return []
        pressed = [e for e in stats if (getattr(e, "waiting", 0) or 0) > 0 and _kv_pct(e) >= KV_PRESSURE_PCT]
        parts = [f"The KV pool fits {x:.2f} requests of the full {length:,} tokens (line {line.line})"]
        if load > x and peak is not None:
            parts.append(f", while up to {load} requests were running or waiting at once (line {peak.line}: "
                         f"{getattr(peak, 'running', 0)} running, {getattr(peak, 'waiting', 0)} waiting)")
        else:
            parts.append(f", while the client ran {client} requests at a time")
        msg = "".join(parts) + "."
        evidence: list[EvidenceItem] = [line]
        if peak is not None and load > x:
            evidence.append(peak)
        if pressed:
            worst = max(pressed, key=lambda e: (getattr(e, "waiting", 0), _kv_pct(e)))
            msg += (f" Requests queued while the KV cache was {_kv_pct(worst):.1f} % full (line {worst.line}: "
                    f"{getattr(worst, 'running', 0)} running, {getattr(worst, 'waiting', 0)} waiting; "
                    f"{len(pressed)} such stats lines): the pool, not the batch limit, set the concurrency.")
            evidence.append(worst)
        else:
            waited = [e for e in stats if (getattr(e, "waiting", 0) or 0) > 0]
            if waited:
                top = max(_kv_pct(e) for e in waited)
                msg += f" Requests waited with the KV cache at most {top:.1f} % full: not for KV space in this log, but"
            else:
                msg += " No request waited in this log, but"
            msg += f" requests that grow towards {length:,} tokens can only run {math.floor(x)} at a time."
        evidence += [e for e in bench[:1]]
        fix = (f"Set `--max-model-len` to the longest request you really serve (now {length:,}); otherwise give the KV "
               f"cache more memory (`--gpu-memory-utilization`, `--kv-cache-memory-bytes`, more GPUs) or lower the "
               f"load (`--max-num-seqs`, client concurrency) to {math.floor(x)} or fewer.")
        return [self.finding(msg, fix, [line], evidence)]


def _load(e: Event) -> int:
    return int(getattr(e, "running", 0) or 0) + int(getattr(e, "waiting", 0) or 0)


def _kv_pct(e: Event) -> float:
    v = getattr(e, "gpu_kv_cache_pct", None)
    if v is None:
        v = getattr(e, "cpu_kv_cache_pct", None)
    return float(v) if v is not None else 0.0

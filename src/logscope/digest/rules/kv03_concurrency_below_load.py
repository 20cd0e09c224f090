"""KV03: fewer full-length requests fit in the KV pool than the load asked for."""

from __future__ import annotations

import math
import re
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
        The printed X assumes every request reaches ``--max-model-len``; it is a worst case, not an
        admission limit. vLLM (V0 and V1 alike) allocates KV blocks as a request's tokens arrive, so
        requests shorter than the maximum fit more than X at a time; when the pool fills, requests
        wait (V1 ``Waiting``, V0 ``Pending``) or are preempted (V1 recomputes them; V0 recomputes or
        swaps them to CPU, ``Swapped``). So the rule tells apart a pool that did limit the load
        (requests queued at high KV usage) from one that only would for requests of the full
        length (then the finding is only ``info``). In the Kimi-K3 case 2.69x at 1,000,000 tokens
        met a load of 10 requests.

    Fix
        When requests queued at high KV usage: give the KV cache more memory
        (``--gpu-memory-utilization``, ``--kv-cache-memory-bytes``, an FP8 KV cache, more GPUs);
        lowering ``--max-num-seqs`` or the client's concurrency trades preemptions for waiting.
        ``--max-model-len`` does not change how many requests fit (only the printed X and the
        longest request allowed). When nothing queued for KV space, the load of this log fits; only
        requests that grow towards the full length would run floor(X) at a time.

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
            parts.append(
                f", while up to {load} requests were running or waiting at once (line {peak.line}: "
                f"{getattr(peak, 'running', 0)} running, {getattr(peak, 'waiting', 0)} waiting)"
            )
        else:
            parts.append(f", while the client ran {client} requests at a time")
        msg = "".join(parts) + "."
        evidence: list[EvidenceItem] = [line]
        if peak is not None and load > x:
            evidence.append(peak)
        if pressed:
            worst = max(pressed, key=lambda e: (getattr(e, "waiting", 0), _kv_pct(e)))
            msg += (
                f" Requests queued while the KV cache was {_kv_pct(worst):.1f} % full (line {worst.line}: "
                f"{getattr(worst, 'running', 0)} running, {getattr(worst, 'waiting', 0)} waiting; "
                f"{len(pressed)} such stats lines): the pool, not the batch limit, set the concurrency."
            )
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
        era = _era(ctx, stats)
        msg += (
            f" {era or 'vLLM'} allocates KV blocks as tokens arrive, so {x:.2f}x is a worst case for requests "
            f"of the full length, not an admission limit."
        )
        more = (
            "give the KV cache more memory (`--gpu-memory-utilization`, `--kv-cache-memory-bytes`, "
            "`--kv-cache-dtype fp8`, more GPUs)"
        )
        preempt = (
            "preemptions (recomputed)"
            if era == "vLLM V1"
            else "preemptions (recomputed or swapped to CPU)"
            if era == "vLLM V0"
            else "preemptions"
        )
        if pressed:
            fix = (
                f"The pool limited this load: {more}; lowering `--max-num-seqs` or the client's concurrency trades "
                f"{preempt} for waiting. `--max-model-len` (now {length:,}) does not change how many requests fit, "
                f"only the printed figure and the longest request allowed."
            )
        else:
            fix = (
                f"Nothing to change for the load of this log (no request queued for KV space). If requests really "
                f"grow towards {length:,} tokens, only {math.floor(x)} run at a time and the rest wait or meet "
                f"{preempt}: then {more}. `--max-model-len` does not change how many requests fit."
            )
        f = self.finding(msg, fix, [line], evidence)
        # the pool did not limit this load: worth knowing, not a warning
        return [f if pressed else f.model_copy(update={"severity": "info"})]


def _era(ctx: Context, stats: list[Event]) -> str | None:
    """``vLLM V0`` (stats lines with ``Swapped:``), ``vLLM V1`` (stats lines without it, or version 0.11 and
    later, where V0 is gone), or None when the log does not say."""
    if stats:
        return "vLLM V0" if any(getattr(e, "swapped", None) is not None for e in stats) else "vLLM V1"
    version = ctx.data.engine_version or ""
    m = re.match(r"v?(\d+)\.(\d+)", version)
    if m and (int(m.group(1)), int(m.group(2))) >= (0, 11):
        return "vLLM V1"
    return None


def _load(e: Event) -> int:
    return int(getattr(e, "running", 0) or 0) + int(getattr(e, "waiting", 0) or 0)


def _kv_pct(e: Event) -> float:
    v = getattr(e, "gpu_kv_cache_pct", None)
    if v is None:
        v = getattr(e, "cpu_kv_cache_pct", None)
    return float(v) if v is not None else 0.0

"""KV04: SGLang cut max_running_requests for lack of state-cache or KV memory."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register

_MAMBA = re.compile(
    r"max_running_requests is capped to (\d+) by the mamba state cache"
    r"(?: \(max_mamba_cache_size=(\d+), (\d+) state slots per request\))?"
)
_KV = re.compile(r"max_running_requests was reduced from the requested (\d+) to (\d+)")
_SPEC_RESET = re.compile(r"Max running requests is reset to (\d+) for speculative decoding")


@register
class RunningRequestsCapped(Rule):
    """SGLang lowered ``max_running_requests`` because a cache could not hold more requests.

    What
        SGLang prints a warning when it lowers the number of requests it will run at once below the
        configured or default value: ``max_running_requests is capped to N by the mamba state cache
        (max_mamba_cache_size=M, S state slots per request)`` for hybrid (Mamba/linear-attention)
        models, and ``max_running_requests was reduced from the requested A to B (per dp worker) due
        to the available KV cache capacity``. The rule reports the cap and compares it with the most
        requests that ran at once in the log.

    Why
        The cap bounds concurrency whatever the KV pool could hold: the state cache, not the KV
        pool, decides how many requests decode together. In the Kimi-K3 case the limit went from 48
        (set for speculative decoding) to 39 because of the Mamba state cache.

    Fix
        For the Mamba state cache: increase ``--mamba-full-memory-ratio`` or ``--max-mamba-cache-size``,
        or halve the state size with ``--mamba-ssm-dtype bfloat16`` (SGLang's own advice). For the KV
        cache: raise ``--mem-fraction-static`` or lower ``--context-length``.

    References
        - SGLang 0.5.23 ``kv_cache_configurator.py`` (both warnings)
        - docs/design CASE: Kimi-K3, "KV pool sizing"
    """

    code = "KV04"
    slug = "running-requests-capped"
    title = "max_running_requests reduced by the state or KV cache"
    severity = "warning"
    confidence = "observed"
    kinds = ("warning", "unparsed")
    anchors = ("by the mamba state cache", "max_running_requests was reduced", "for speculative decoding")
    engines = ("sglang",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        mamba = ctx.grep(_MAMBA, ("by the mamba state cache",))
        kv = ctx.grep(_KV, ("max_running_requests was reduced",))
        if not mamba and not kv:
            return []
        reset = ctx.grep(_SPEC_RESET, ("for speculative decoding",))
        hit = (mamba or kv)[0]
        if mamba:
            cap = int(hit.match.group(1))
            msg = f"SGLang capped max_running_requests to {cap} by the Mamba state cache"
            if hit.match.group(2):
                msg += f" ({hit.match.group(2)} state slots, {hit.match.group(3)} per request)"
            fix = (
                "Increase `--mamba-full-memory-ratio` or `--max-mamba-cache-size`, or halve the state size with "
                "`--mamba-ssm-dtype bfloat16`."
            )
        else:
            cap = int(hit.match.group(2))
            msg = (
                f"SGLang reduced max_running_requests from the requested {hit.match.group(1)} to {cap} for lack "
                f"of KV cache capacity"
            )
            fix = "Raise `--mem-fraction-static` or lower `--context-length` so the KV pool holds more requests."
        msg += f" (line {hit.event.line})"
        if reset:
            msg += f", below the {reset[0].match.group(1)} set for speculative decoding (line {reset[0].event.line})"
        msg += "."
        evidence: list[EvidenceItem] = [(hit.event, "max_running_requests")]
        evidence += [(h.event, "max_running_requests") for h in (mamba + kv)[1:2]]
        evidence += [(h.event, "Max running requests") for h in reset[:1]]
        batches = [e for _i, e in ctx.of_kind("decode_batch", "prefill_batch")]
        if batches:
            peak = max(
                batches, key=lambda e: (int(getattr(e, "running", 0) or 0), int(getattr(e, "queue", 0) or 0))
            )
            running, queue = int(getattr(peak, "running", 0) or 0), int(getattr(peak, "queue", 0) or 0)
            if running >= cap and queue > 0:
                msg += (
                    f" The cap was reached: {running} requests ran while {queue} waited (line {peak.line})."
                )
                evidence.append(peak)
            else:
                msg += f" The load in this log peaked at {running} running requests, under the cap."
        return [self.finding(msg, fix, [h.event for h in mamba + kv], evidence)]

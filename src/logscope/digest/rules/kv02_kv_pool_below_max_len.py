"""KV02: the KV pool cannot hold one request of the maximum length."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import line_of
from logscope.events import Event

_SGLANG_WARNING = re.compile(r"KV pool holds (\d+) tokens, fewer than --context-length (\d+)")


@register
class KvPoolBelowMaxLen(Rule):
    """The KV pool is smaller than one request of the maximum length.

    What
        The engine's own lines say that one request of ``--max-model-len`` / ``--context-length``
        tokens does not fit in the KV pool: vLLM's start-up error ``To serve at least one request
        with the model's max seq len (L) ... estimated maximum model length is N`` (or V0's ``The
        model's max seq len (L) is larger than the maximum number of tokens that can be stored in KV
        cache (N)``), ``Maximum concurrency for L tokens per request`` below 1x, SGLang 0.5.23's
        ``KV pool holds N tokens, fewer than --context-length L``, or SGLang's summary line with
        ``max_total_num_tokens`` below ``context_len``.

    Why
        vLLM refuses to start in this state. SGLang starts, but a request longer than the pool is
        refused or truncated at serving time: the advertised context length is not servable. In the
        Kimi-K3 case SGLang's full-attention pool held 916,672 tokens against a 1,000,000-token
        context length, 8.3 % short.

    Fix
        Lower ``--max-model-len`` (vLLM) or ``--context-length`` (SGLang) to what the pool holds, or
        give the KV cache more memory (``--gpu-memory-utilization`` / ``--mem-fraction-static``, a
        smaller model footprint, more GPUs), or free memory other processes hold on the GPUs.

    References
        - vLLM ``kv_cache_utils._check_enough_kv_cache_memory`` (V1), ``worker.raise_if_cache_size_invalid`` (V0)
        - SGLang ``tp_worker.get_worker_info`` (0.5.23 warning), the ``max_total_num_tokens=...`` summary line
        - docs/design CASE: Kimi-K3, "KV pool sizing"
    """

    code = "KV02"
    slug = "kv-pool-below-max-len"
    title = "KV pool smaller than one full-length request"
    severity = "warning"
    confidence = "observed"
    kinds = ("kv_capacity", "max_concurrency", "scheduler_limits", "warning", "unparsed")
    anchors = ("fewer than --context-length",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        sglang = ctx.engine == "sglang"
        flag = "--context-length" if sglang else "--max-model-len"
        mem_flag = "--mem-fraction-static" if sglang else "--gpu-memory-utilization"
        caps = [e for _i, e in ctx.of_kind("kv_capacity")]
        conc = [e for _i, e in ctx.of_kind("max_concurrency") if getattr(e, "concurrency", 1.0) < 1.0]
        warned = ctx.grep(_SGLANG_WARNING, self.anchors)
        limits = [
            e
            for _i, e in ctx.of_kind("scheduler_limits")
            if getattr(e, "context_len", None)
            and getattr(e, "max_total_num_tokens", 0) < getattr(e, "context_len", 0)
        ]
        evidence: list[EvidenceItem] = []
        counted: list[Event] = []
        if caps:
            e = caps[0]
            length, fits = (
                getattr(e, "max_seq_len", None),
                getattr(e, "estimated_max_len", None) or getattr(e, "kv_tokens", None),
            )
            need, avail = getattr(e, "needed_gib", None), getattr(e, "available_gib", None)
            msg = "The KV cache cannot hold one request of the maximum length"
            if length:
                msg += f" ({length:,} tokens)"
            if need is not None and avail is not None:
                msg += f": it needs {need:g} GiB of KV cache and {avail:g} GiB is available"
            if fits and length:
                msg += f"; {fits:,} tokens fit, {100 * (1 - fits / length):.1f} % short"
            msg += f" (line {line_of(e, 'max seq len')}). The engine refused to start."
            limit = fits
            evidence.append((e, "max seq len"))
            counted = [caps[0]]
        elif warned:
            h = warned[0]
            tokens, length = int(h.match.group(1)), int(h.match.group(2))
            msg = (
                f"The KV pool holds {tokens:,} tokens, {100 * (1 - tokens / length):.1f} % short of one request of "
                f"the context length ({length:,} tokens; line {h.event.line}): requests longer than the pool are "
                f"refused or truncated at serving time."
            )
            limit = tokens
            evidence.append((h.event, "KV pool holds"))
            counted = [h.event]
        elif conc:
            e = conc[-1]
            per, x = getattr(e, "tokens_per_request", 0), getattr(e, "concurrency", 0.0)
            msg = (
                f"The KV pool holds {x:.2f}x one request of {per:,} tokens (line {e.line}): a request of the "
                f"maximum length cannot fit."
            )
            limit = int(per * x) if per and x else None
            evidence.append(e)
            counted = [e]
        elif limits:
            e = limits[-1]
            total, ctx_len = (
                int(getattr(e, "max_total_num_tokens", 0)),
                int(getattr(e, "context_len", 0) or 1),
            )
            msg = (
                f"The KV pool holds {total:,} tokens (max_total_num_tokens), {100 * (1 - total / ctx_len):.1f} % "
                f"short of the context length {ctx_len:,} (line {e.line}): one full-length request cannot fit."
            )
            limit = total
            evidence.append(e)
            counted = [e]
        else:
            return []
        for extra in caps[1:2] + conc[-1:] + [h.event for h in warned[:1]] + limits[-1:]:
            evidence.append(extra)
        to = f" to {limit:,} tokens or less" if limit else ""
        fix = (
            f"Lower `{flag}`{to}, or give the KV cache more memory (`{mem_flag}`, more GPUs, fewer other "
            f"processes on the GPUs)."
        )
        return [self.finding(msg, fix, counted, evidence)]

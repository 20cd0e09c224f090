"""QT01: the FP8 KV cache runs with default scaling factors of 1.0."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import hits_events, plural, ranks_text

_PATTERN = re.compile(
    r"Using KV cache scaling factor 1\.0 for fp8"
    r"|Using FP8 KV cache but no scaling factors provided"
    r"|Defaulting to KV cache scaling factors = 1\.0"
)


@register
class Fp8KvWithoutScales(Rule):
    """The FP8 KV cache has no calibrated scaling factors and falls back to 1.0.

    What
        With ``--kv-cache-dtype fp8`` the K and V values are scaled before they are cast to FP8.
        When the checkpoint carries no ``k_scale`` / ``v_scale``, the engine uses 1.0 and says so:
        vLLM ``Using KV cache scaling factor 1.0 for fp8_e4m3 ...``, SGLang ``Using FP8 KV cache but
        no scaling factors provided. Defaulting to scaling factors of 1.0`` (or ``Defaulting to KV
        cache scaling factors = 1.0 ... as an error occurred during loading``). Each rank prints it.
        vLLM's start-up note ``Using fp8 data type to store kv cache ... may cause accuracy drop
        without a proper scaling factor`` alone does not trigger this rule: it does not say the
        scales are missing.

    Why
        Values outside FP8's range are clipped and small ones lose precision: output quality can
        drop, and nothing in the throughput numbers shows it. The accuracy of the run is unverified.

    Fix
        Use a checkpoint with calibrated KV-cache scales (quantize with KV-cache calibration), or keep
        the KV cache in the model's dtype (``--kv-cache-dtype auto``), and check accuracy on your own
        evaluation before trusting FP8 KV.

    References
        - vLLM ``model_executor/layers/quantization/kv_cache.py`` (``BaseKVCacheMethod``)
        - SGLang ``model_runner`` FP8 KV scale loading
        - docs/design CASE: Kimi-K3, "Warnings worth a digest"
    """

    code = "QT01"
    slug = "fp8-kv-without-scales"
    title = "FP8 KV cache without scaling factors"
    severity = "warning"
    confidence = "observed"
    kinds = ("warning", "unparsed")
    anchors = ("scaling factor",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        hits = ctx.grep(_PATTERN, self.anchors)
        if not hits:
            return []
        events = hits_events(hits)
        n = sum(e.repeated for e in events)
        msg = (
            f"The FP8 KV cache uses scaling factors of 1.0 because the checkpoint provides none "
            f"({plural(n, 'line')}{ranks_text(events)}; first at line {events[0].line}): the accuracy of "
            f"this run is unverified."
        )
        fix = (
            "Use a checkpoint with calibrated KV-cache scales, or keep the KV cache in the model's dtype "
            "(`--kv-cache-dtype auto`), and check accuracy on your own evaluation."
        )
        return [self.finding(msg, fix, events, [(h.event, h.text) for h in hits])]

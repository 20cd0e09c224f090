"""QT02: DeepGEMM runs on a checkpoint whose scales are not ue8m0."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import hits_events

_PATTERN = re.compile(r"DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0")


@register
class DeepGemmScaleFmt(Rule):
    """DeepGEMM is enabled but the checkpoint's scale format is not ue8m0.

    What
        SGLang (0.5.7 to 0.5.10) checks the FP8 checkpoint when DeepGEMM is on and warns:
        ``DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. This might cause accuracy
        degradation on Blackwell.``

    Why
        On Blackwell, DeepGEMM's FP8 kernels use power-of-two (ue8m0) scales; scales of another
        format are converted, which can cost accuracy. The throughput looks normal while the outputs
        may be worse.

    Fix
        Serve a checkpoint quantized with ue8m0 scales for Blackwell, or run the FP8 GEMMs on another
        backend (turn SGLang's JIT DeepGEMM off) and compare accuracy on your own evaluation.

    References
        - SGLang ``configs/model_config.py`` ``_verify_quantization`` (0.5.7-0.5.10)
        - docs/design CASE: Kimi-K3, "Warnings worth a digest"
    """

    code = "QT02"
    slug = "deepgemm-scale-fmt"
    title = "DeepGEMM with a checkpoint whose scales are not ue8m0"
    severity = "warning"
    confidence = "observed"
    kinds = ("warning", "unparsed")
    anchors = ("ue8m0",)
    engines = ("sglang",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        hits = ctx.grep(_PATTERN, self.anchors)
        if not hits:
            return []
        e = hits[0].event
        msg = (
            f"DeepGEMM is enabled but the checkpoint's scale format is not ue8m0 (line {e.line}): SGLang warns of "
            f"accuracy degradation on Blackwell."
        )
        fix = (
            "Serve a checkpoint with ue8m0 scales on Blackwell, or run the FP8 GEMMs on another backend (turn "
            "SGLang's JIT DeepGEMM off) and compare accuracy on your own evaluation."
        )
        return [self.finding(msg, fix, hits_events(hits), [(h.event, h.text) for h in hits])]

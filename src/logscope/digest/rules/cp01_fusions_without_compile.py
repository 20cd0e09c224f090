"""CP01: fusion passes are listed as enabled while the compile pipeline that runs them is off."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register

_FUSIONS = re.compile(r"Enabled custom fusions: ([^\n]+)")
_COMPILE_OFF = re.compile(
    r"disabling vLLM's torch\.compile pipeline[^\n]*|Inductor compilation was disabled by user settings"
)


@register
class FusionsWithoutCompile(Rule):
    """Custom fusion passes are listed as enabled while torch.compile is off.

    What
        vLLM prints the custom fusion passes it configured (``Enabled custom fusions: norm_quant,
        act_quant, allreduce_rms``). These are torch.compile / Inductor passes. When the same log
        says the compile pipeline is off (``VLLM_USE_BREAKABLE_CUDAGRAPH is set, disabling vLLM's
        torch.compile pipeline. Equivalent to -cc.mode=none.``, ``Inductor compilation was disabled by
        user settings, optimizations settings that are only active during inductor compilation will
        be ignored.``), the rule reports both. It does not fire on the Inductor notice alone.

    Why
        The configuration promises fusions (quantization fused into norms and activations, all-reduce
        fused with RMSNorm) that cannot run without the compiler: kernels run unfused and slower than
        the configuration suggests, and comparisons with a setup where they do apply mislead. In the
        Kimi-K3 case breakable CUDA graphs forced the compile mode to NONE.

    Fix
        If the fusions matter, keep the compile pipeline on (vLLM: ``VLLM_USE_BREAKABLE_CUDAGRAPH=0``,
        a compilation mode other than none); otherwise drop them from the compilation config so that
        the configuration says what runs.

    References
        - vLLM ``config/vllm.py`` (breakable CUDA graphs, Inductor notice), ``config/compilation.py``
        - docs/design CASE: Kimi-K3, "Warnings worth a digest"
    """

    code = "CP01"
    slug = "fusions-without-compile"
    title = "Fusion passes enabled while torch.compile is off"
    severity = "info"
    confidence = "inferred"
    kinds = ("warning", "unparsed")
    anchors = ("Enabled custom fusions", "torch.compile pipeline", "Inductor compilation was disabled")
    engines = ("vllm",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        fusions = ctx.grep(_FUSIONS, ("Enabled custom fusions",))
        off = ctx.grep(_COMPILE_OFF, ("torch.compile pipeline", "Inductor compilation was disabled"))
        if not fusions or not off:
            return []
        names = fusions[0].match.group(1).strip().rstrip(".")
        msg = (
            f"vLLM lists custom fusion passes as enabled ({names}; line {fusions[0].event.line}) while the compile "
            f'pipeline that runs them is off (line {off[0].event.line}: "{off[0].text}"): the fusions most '
            f"likely do not apply, and the kernels run unfused."
        )
        fix = (
            "If the fusions matter, keep the compile pipeline on (`VLLM_USE_BREAKABLE_CUDAGRAPH=0`, a compilation "
            "mode other than none); otherwise drop them from the compilation config."
        )
        evidence: list[EvidenceItem] = [(fusions[0].event, "Enabled custom fusions")]
        evidence += [(h.event, h.text) for h in off[:2]]
        return [self.finding(msg, fix, [fusions[0].event], evidence)]

"""JT01: kernels were compiled while the server was serving, not during warmup."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import plural, ranks_text
from logscope.events import Event

# compile stages that are loads or saves of compiled code, not compilations
_NOT_COMPILING = {"cache_load", "aot_load", "aot_save", "cache_save"}
_SGLANG_JIT = re.compile(r"DeepGEMM JIT Compiling for <(?P<name>[^>]+)>")


@register
class RuntimeJit(Rule):
    """Kernels were JIT-compiled while serving requests, outside the warmup.

    What
        vLLM's kernel JIT monitor warns ``Triton kernel JIT compilation during inference: <kernel>.
        This causes a latency spike; consider extending warmup to cover this shape/config.``; a
        torch.compile or graph compilation line after the server became ready is a compile during
        serving too, and so is SGLang's ``DeepGEMM JIT Compiling for <kernel> ...`` after its ready
        line. The rule counts them per rank and names the kernels.

    Why
        A compilation blocks the step that needs it, for tens of milliseconds to seconds: the first
        requests' TTFT and the windows they fall in are inflated, so early measurements are
        pessimistic. In the Kimi-K3 case four operators compiled during the first minute of the 64K
        test, beside 32 OOM retries.

    Fix
        Extend the warmup to the shapes you serve (vLLM: send a warm-up request of the real length
        and batch before measuring, cover the batch sizes in the compile / CUDA graph sizes; SGLang:
        precompile DeepGEMM with ``python3 -m sglang.compile_deep_gemm`` and the server's arguments),
        and leave the first requests out of measurements.

    References
        - vLLM ``triton_utils/jit_monitor.py``
        - SGLang ``deep_gemm_wrapper/compile_utils.py``
        - docs/design CASE: Kimi-K3, "Disturbances in the 64K vLLM run"
    """

    code = "JT01"
    slug = "runtime-jit-compile"
    title = "Kernels JIT-compiled during serving"
    severity = "warning"
    confidence = "observed"
    kinds = ("compile", "warning", "unparsed")
    anchors = ("DeepGEMM JIT Compiling",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        ready = ctx.ready_seq
        found: list[tuple[Event, str]] = []
        for i, e in ctx.of_kind("compile"):
            stage = getattr(e, "stage", "")
            if stage == "runtime_jit":
                found.append((e, str(getattr(e, "detail", None) or "a Triton kernel")))
            elif (
                ready is not None and i > ready and stage not in _NOT_COMPILING and ctx.phase(i) == "serving"
            ):
                found.append(
                    (
                        e,
                        f"torch.compile {stage}"
                        + (f" {getattr(e, 'detail', '')}" if getattr(e, "detail", None) else ""),
                    )
                )
        if ready is not None:
            for h in ctx.grep(_SGLANG_JIT, self.anchors):
                if h.seq > ready and ctx.phase(h.seq) == "serving":
                    found.append((h.event, f"DeepGEMM {h.match.group('name')}"))
        if not found:
            return []
        found.sort(key=lambda x: ctx.index_of(x[0]) or 0)
        events = [e for e, _n in found]
        names: list[str] = []
        for _e, name in found:
            if name not in names:
                names.append(name)
        n = sum(e.repeated for e in events)
        first = events[0]
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        msg = (
            f"{plural(n, 'kernel compilation')} happened while serving{ranks_text(events)}: {shown} (first at line "
            f"{first.line}{', ' + first.time if first.time else ''}). Each blocks the step that needs it and "
            f"inflates the latency of the requests in flight."
        )
        overlap = self._overlaps(ctx)
        if overlap:
            msg += f" {overlap}"
        fix = (
            "Extend the warmup to the shapes you serve (warm-up requests of the real length and batch before "
            "measuring; SGLang: `python3 -m sglang.compile_deep_gemm` with the server's arguments) and leave the "
            "first requests out of measurements."
        )
        return [self.finding(msg, fix, events, [(e, None) for e in events])]

    @staticmethod
    def _overlaps(ctx: Context) -> str:
        """The disturbances analysis' note on which measurement windows the compiles fall in."""
        dist = ctx.analysis("disturbances")
        notes = [s for s in (getattr(dist, "overlapping", None) or []) if "compile" in s]
        if not notes:
            return ""
        text = "; ".join(notes)
        return text[0].upper() + text[1:] + "."

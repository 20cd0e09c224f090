"""KV01: the KV cache takes more memory than the engine's own budget allows."""

from __future__ import annotations

import math
from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import plural, ranks_text, serving

MIN_GIB = 0.05  # printed figures have two decimals: smaller differences are rounding


@register
class KvCacheOvercommitted(Rule):
    """The KV cache is larger than the memory budget the engine itself computed.

    What
        vLLM profiles memory at start-up and, in builds that print it, suggests the KV cache size that
        fits the requested ``--gpu-memory-utilization``: ``Replace gpu_memory_utilization config with
        --kv-cache-memory=N (X GiB) to fit into requested memory ... Current kv cache memory in use is
        Y GiB``. When Y is above X, or when weights + non-torch memory + activation peak + CUDA graphs
        + KV add up to more than utilization × total memory, the KV cache was sized beyond the budget.
        The rule reports the difference with the engine's own numbers, and the out-of-memory events
        that followed while serving, if any.

    Why
        Memory the budget does not cover is memory other allocations (activations of a large batch,
        CUDA graphs, the sampler, NCCL buffers) then miss: the engine runs into out-of-memory errors
        under load, retries steps (latency spikes) or dies. In the Kimi-K3 case the KV cache took
        43.76 GiB where 38.48 GiB fitted, and 32 soft OOM retries on 8 GPUs followed.

    Fix
        Pin the KV cache to what fits, ``--kv-cache-memory=<the suggested bytes>``, or lower
        ``--gpu-memory-utilization`` by the over-commit divided by the GPU's memory.

    References
        - vLLM ``Worker.compile_or_warm_up_model`` (the ``--kv-cache-memory`` suggestion, INFO in
          builds of 2025-09-11 to 2025-09-23, DEBUG after)
        - docs/design CASE: Kimi-K3 on 8×B300, "KV pool sizing"
    """

    code = "KV01"
    slug = "kv-cache-overcommitted"
    title = "KV cache over-committed beyond the engine's memory budget"
    severity = "warning"
    confidence = "observed"
    requires = ("kv_pool",)
    kinds = ("memory_profile",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        kv = ctx.analysis("kv_pool")
        over = kv.overcommit_gib
        budget = kv.memory
        if over is None or over < MIN_GIB or budget is None:
            return []
        profiles = [e for _i, e in ctx.of_kind("memory_profile")]
        suggestion = next(
            (e for e in reversed(profiles) if getattr(e, "suggested_kv_cache_bytes", None)), None
        )
        used = budget.kv_cache_gib if budget.kv_cache_gib is not None else kv.memory_gib
        util, total = budget.gpu_memory_utilization, budget.total_gib
        requested = budget.requested_gib
        if requested is None and util is not None and total is not None:
            requested = util * total
        budget_text = (
            f" ({util:g} x {total:.2f} GiB = {requested:.2f} GiB)"
            if util is not None and total is not None and requested is not None
            else ""
        )
        if suggestion is not None and budget.suggested_kv_cache_bytes is not None:
            fit = budget.suggested_kv_cache_bytes / 2**30
            msg = (
                f"The KV cache takes {used:.2f} GiB, but {fit:.2f} GiB is what fits the requested memory"
                f"{budget_text} by vLLM's own accounting (line {suggestion.line}): over-committed by {over:.2f} GiB."
            )
            fix = f"Pin the KV cache to what fits with `--kv-cache-memory={budget.suggested_kv_cache_bytes}`"
            evidence_lines: list[EvidenceItem] = [(suggestion, "--kv-cache-memory=")]
            counted = [suggestion]
        else:
            parts = [
                ("weights", budget.weights_gib),
                ("non-torch", budget.non_torch_gib),
                ("activation peak", budget.activation_peak_gib),
                ("CUDA graphs", budget.cuda_graph_gib),
                ("KV cache", used),
            ]
            shown = " + ".join(f"{name} {v:.2f}" for name, v in parts if v is not None)
            msg = (
                f"{shown} GiB come to {over:.2f} GiB more than the budget{budget_text} the engine was given: "
                f"the KV cache is over-committed by {over:.2f} GiB."
            )
            fix = f"Cap the KV cache at {max((used or 0) - over, 0):.2f} GiB (`--kv-cache-memory-bytes`)"
            evidence_lines = list(profiles[-3:])
            counted = profiles[-1:]
        if util is not None and total:
            lower = math.floor((util - over / total) * 100) / 100
            fix += f", or lower `--gpu-memory-utilization` from {util:g} to {lower:.2f} or below"
        fix += "."
        ooms = [(i, e) for i, e in ctx.of_kind("oom") if serving(ctx, i)]
        evidence = list(evidence_lines)
        if ooms:
            n = sum(e.repeated for _i, e in ooms)
            retried = sum(e.repeated for _i, e in ooms if getattr(e, "retry", False))
            how = f", {retried:,} of them retried" if retried else ""
            msg += (
                f" {plural(n, 'out-of-memory event')} followed while serving{ranks_text(e for _i, e in ooms)}{how} "
                f"(first at line {ooms[0][1].line}): the symptom to expect when the KV cache holds memory the "
                f"budget left for activations."
            )
            evidence += [(e, "out of memory") for _i, e in ooms[:3]]
        return [self.finding(msg, fix, counted, evidence)]

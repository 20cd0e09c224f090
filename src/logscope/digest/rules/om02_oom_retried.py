"""OM02: CUDA out of memory while serving, retried by the engine."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._oom import describe, serving_ooms


@register
class OomRetried(Rule):
    """The GPU ran out of memory while serving; the engine freed its cache and retried.

    What
        Out-of-memory events after the server became ready that the engine recovered from, such as
        ``Soft OOM during execute_model: emptied the CUDA caching allocator (torch.cuda.empty_cache())
        and retrying the step once. torch.OutOfMemoryError: CUDA out of memory. Tried to allocate
        4.52 GiB ...`` printed as a warning. Each rank prints its own, so the rule gives rounds x ranks.

    Why
        A retried step survives but costs a cache flush and a second attempt: a latency spike for
        every request in the batch, and a sign that the memory budget is too tight, one larger
        batch away from an unrecovered OOM. In the Kimi-K3 case 32 retries on 8 GPUs (4 rounds),
        each asking 4.52 GiB with 2.67 GiB free, came from a KV cache over-committed by 5.28 GiB.

    Fix
        Leave more headroom: lower ``--gpu-memory-utilization`` / ``--mem-fraction-static`` a little or
        pin ``--kv-cache-memory`` to the engine's suggestion (see KV01), or reduce the largest step
        (``--max-num-batched-tokens``, ``--max-num-seqs``).

    References
        - PyTorch CUDA caching allocator (``torch.cuda.empty_cache``)
        - docs/design CASE: Kimi-K3, "Disturbances in the 64K vLLM run"
    """

    code = "OM02"
    slug = "oom-retried"
    title = "Out-of-memory retries while serving"
    severity = "warning"
    confidence = "observed"
    kinds = ("oom",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        events, when = serving_ooms(ctx, retried=True)
        if not events:
            return []
        msg = (
            f"{describe(events, when, 'out-of-memory retry', 'out-of-memory retries')}. The engine emptied "
            f"its allocator cache and retried each step: a latency spike for the whole batch, and a sign the memory "
            f"budget is too tight."
        )
        fix = (
            "Leave more headroom: lower `--gpu-memory-utilization` / `--mem-fraction-static` a little or pin "
            "`--kv-cache-memory` to the engine's suggestion, or reduce the largest step "
            "(`--max-num-batched-tokens`, `--max-num-seqs`)."
        )
        return [self.finding(msg, fix, events, [(e, "out of memory") for e in events])]

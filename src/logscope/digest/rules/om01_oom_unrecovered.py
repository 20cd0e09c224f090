"""OM01: CUDA out of memory while serving, not recovered."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._oom import describe, serving_ooms
from logscope.digest.rules._shared import clip


@register
class OomUnrecovered(Rule):
    """The GPU ran out of memory while serving and the engine did not recover.

    What
        A CUDA out-of-memory error (PyTorch's ``CUDA out of memory. Tried to allocate ...`` or
        ``torch.OutOfMemoryError``, usually inside a traceback) after the server became ready, that
        the engine did not retry. OOMs during start-up are reported as a failed start (EN02), OOMs
        the engine retried as OM02.

    Why
        An unrecovered OOM fails the step: the requests in flight error out and the engine process
        usually dies, taking the server down.

    Fix
        Leave more memory headroom: lower ``--gpu-memory-utilization`` / ``--mem-fraction-static``
        (or pin ``--kv-cache-memory`` to the engine's suggestion), reduce the largest step
        (``--max-num-batched-tokens``, ``--max-num-seqs``, ``--cuda-graph-max-bs``), and make sure no
        other process shares the GPU.

    References
        - PyTorch CUDA caching allocator (``torch.OutOfMemoryError``)
        - vLLM ``gpu_model_runner.py``; SGLang scheduler exception handling
    """

    code = "OM01"
    slug = "oom-unrecovered"
    title = "Out of memory while serving, not recovered"
    severity = "error"
    confidence = "observed"
    kinds = ("oom",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        events, when = serving_ooms(ctx, retried=False)
        if not events:
            return []
        first_msg = clip(str(getattr(events[0], "message", "")).split("\n", 1)[0], 160).rstrip(".")
        msg = (
            f"{describe(events, when, 'out-of-memory error')}; not recovered: the step failed and the requests in flight "
            f"with it. The error: {first_msg}."
        )
        fix = (
            "Leave more memory headroom: lower `--gpu-memory-utilization` / `--mem-fraction-static` (or pin "
            "`--kv-cache-memory`), reduce the largest step (`--max-num-batched-tokens`, `--max-num-seqs`), and keep "
            "other processes off the GPUs."
        )
        return [self.finding(msg, fix, events, [(e, "out of memory") for e in events])]

"""ST01: requests were in flight but generation stalled to near zero, or the queue was never admitted."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._stalls import others, spans_of, where


@register
class GenerationStalled(Rule):
    """Requests were in flight, yet generation fell to near zero, or nobody was admitted from the queue.

    What
        The ``stalls`` analysis follows the periodic lines of each engine (vLLM stats lines, SGLang
        ``Decode batch`` lines) and marks a window stalled when requests were running, no prefill
        happened in it, and the generation rate was below 10 % of the run's sustained peak (the
        highest median of 3 consecutive busy windows) both in aggregate and per running request,
        or exactly 0. The rule fires on 3 or more consecutive stalled windows (no idle gap between
        them), with the span's lines and times. An engine that is slow all run long (the same low
        rate throughout) is not stalled: the peak is its own. It also fires (vLLM) on 6 or more
        consecutive windows in which requests waited and nobody was admitted (prompt throughput 0,
        the running count unchanged, the queue not shorter) while the KV cache was under 25 % full
        and the batch below ``max_num_seqs`` (when the log gives it): a stuck scheduler, whatever
        the rate of the requests already running.

    Why
        A stall is not a decode rate: averaged in, ten minutes of ``Running: 1, Waiting: 14`` at
        5 tok/s read as a "stable" rate. It points at the engine, not the workload: requests that
        neither advance nor finish while the KV pool is full (thrashing after retraction or
        preemption), a rank waiting in a collective, a runtime compilation, a host starved of CPU.

    Fix
        Look at what the engine did inside the span: the lines logged there, GPU utilisation, and
        a stack dump of the scheduler / engine-core process while it happens
        (``py-spy dump --pid PID``). When the KV cache was full in the span, give the pool more room
        or lower the concurrency; when it repeats at the same point, report it upstream with the
        span's lines.

    References
        - vLLM stats line (``Avg generation throughput``, ``Running``, ``Waiting``): formats reference 2.1
        - SGLang ``Decode batch`` line: formats reference 3.1
        - logscope issue #16: "a hung or stalled engine is reported as a stable decode rate"
    """

    code = "ST01"
    slug = "generation-stalled"
    title = "Requests stalled: generation near zero or a queue nobody is admitted from"
    severity = "warning"
    confidence = "heuristic"
    requires = ("stalls",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        spans = spans_of(ctx, "stalled")
        if not spans:
            return []
        s = spans[0]
        msg = f"Requests stalled at {where(s)}: {s.detail}.{others(spans)}"
        fix = (
            "Look at what the engine did in that span (the lines logged there, GPU utilisation, a stack dump of the "
            "engine process with `py-spy dump --pid PID` while it happens). Leave the span out of any decode rate."
        )
        f = self.finding(msg, fix, [], [ev for sp in spans[:2] for ev in sp.evidence])
        return [f.model_copy(update={"count": len(spans)})]

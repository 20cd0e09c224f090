"""ST02: requests waited while nothing ran and nothing was done: the scheduler deadlocked."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._stalls import others, spans_of, where


@register
class SchedulerDeadlock(Rule):
    """Requests waited with none running and nothing generated or prefilled: a scheduler deadlock.

    What
        A stats window that shows ``Running: 0`` with a waiting queue (``Waiting: 6``, V0
        ``Pending: 6``) and 0 tokens/s of both prompt and generation throughput: the engine holds
        requests and runs none of them. The rule fires when that holds for 2 or more consecutive
        windows, or when the periodic lines stop right after such a window for more than 3 logging
        intervals while the log goes on (vLLM V1 logs a window whose throughputs and the previous
        window's are all zero at DEBUG, so a deadlocked V1 engine prints one such line and then
        nothing at INFO). A window at the start of a burst, followed by progress, is not one.

    Why
        Waiting requests are only admitted by the scheduler; with nothing running, nothing frees
        KV space or finishes, so the queue never drains and clients time out. It is a recurring
        failure: a request that can never be admitted (its prompt needs more KV blocks than the
        pool can ever free, an encoder or LoRA budget it cannot get) blocks the queue head, or a
        scheduler bug of the version.

    Fix
        Find the request at the head of the queue (``--enable-log-requests`` shows each request's
        prompt length) and compare it with the KV pool and ``--max-num-batched-tokens``; dump the
        engine-core stacks while it is stuck (``py-spy dump --pid PID``); look for the version's
        fix upstream and upgrade.

    References
        - vLLM stats line ``Running: N reqs, Waiting: N reqs`` (formats reference 2.1) and its idle
          suppression to DEBUG (#16735)
        - logscope issue #16: "Running: 0, Waiting: 6 with 0 tok/s gets no finding"
    """

    code = "ST02"
    slug = "scheduler-deadlock"
    title = "Waiting requests, none running, nothing done"
    severity = "error"
    confidence = "inferred"
    requires = ("stalls",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        spans = spans_of(ctx, "deadlock")
        if not spans:
            return []
        s = spans[0]
        msg = (
            f"The scheduler held {s.waiting} waiting request(s) with none running at {where(s)}: {s.detail}."
            f"{others(spans)}"
        )
        fix = (
            "Find the request at the head of the queue (`--enable-log-requests` shows prompt lengths) and compare it "
            "with the KV pool and `--max-num-batched-tokens`; dump the engine-core stacks while it is stuck "
            "(`py-spy dump --pid PID`); look for this version's fix upstream."
        )
        f = self.finding(msg, fix, [], [ev for sp in spans[:2] for ev in sp.evidence])
        return [f.model_copy(update={"count": len(spans)})]

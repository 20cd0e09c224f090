"""ST03: the periodic lines stopped while requests were in flight: the engine froze."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._stalls import others, spans_of, where


@register
class EngineFrozen(Rule):
    """The engine's periodic lines stopped for more than 3 intervals while requests were in flight.

    What
        vLLM prints a stats line every ``VLLM_LOG_STATS_INTERVAL`` (10 s) while it has work, and
        always prints the window after a busy one; SGLang prints a ``Decode batch`` line every 40
        decode steps while requests run. The rule fires when these lines stop for more than 3
        intervals past the expected next line (and at least 30 s) while requests were in flight:
        the line before the silence shows a waiting queue or (vLLM) running requests, or (SGLang)
        the lines resume with a ``Decode batch`` line and no ``Prefill batch`` line between (the
        same batch went on). The span runs to the next periodic line, else to the clean stop or
        the end of the log; lines logged inside it are shown. Silence after the load ended
        (``Running: 0, Waiting: 0``) is an idle engine, and silence across a change of process id
        is a restart: neither fires.

    Why
        An engine that stops reporting with requests in flight is stuck: a rank waiting in a
        collective (NCCL) for a peer that died or diverged, a worker blocked on I/O, a long
        compilation at run time, or the host paused. Clients see requests hang; the log shows
        only a hole, which a summed decode rate hides.

    Fix
        Read the lines inside the span (vLLM ``No available shared memory broadcast block found``,
        SGLang watchdog dumps, NCCL errors); dump the stacks of the engine processes while it hangs
        (``py-spy dump --pid PID``); for multi-GPU runs, run with ``NCCL_DEBUG=INFO``; SGLang's
        ``--watchdog-timeout`` turns a hang into a crash with a dump.

    References
        - vLLM stats interval and idle suppression: formats reference 2.1 (#16735)
        - vLLM ``No available shared memory broadcast block found``: formats reference, the classic hang symptom
        - SGLang watchdog (``--watchdog-timeout``): formats reference, errors
    """

    code = "ST03"
    slug = "engine-frozen"
    title = "Periodic lines stopped with requests in flight"
    severity = "error"
    confidence = "inferred"
    requires = ("stalls",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        spans = spans_of(ctx, "frozen")
        if not spans:
            return []
        s = spans[0]
        msg = f"The engine stopped reporting at {where(s)}: {s.detail}.{others(spans)}"
        fix = (
            "Read the lines inside the span; dump the engine processes' stacks while it hangs (`py-spy dump --pid "
            "PID`); on multi-GPU runs set `NCCL_DEBUG=INFO`; SGLang's `--watchdog-timeout` turns a hang into a "
            "crash with a dump."
        )
        f = self.finding(msg, fix, [], [ev for sp in spans[:2] for ev in sp.evidence])
        return [f.model_copy(update={"count": len(spans)})]

"""EN01: an engine process died (not at a clean shutdown)."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._failures import death_hits, root_cause, shows_startup
from logscope.digest.rules._shared import clip, line_of


@register
class EngineDied(Rule):
    """An engine process died or its scheduler hit an exception while the server was up.

    What
        Lines that say an engine, worker or scheduler process is gone: vLLM ``Engine core proc ...
        died unexpectedly``, ``Worker proc ... died unexpectedly``, ``EngineCore encountered a fatal
        error``, ``EngineDeadError``; SGLang ``Scheduler hit an exception: Traceback ...``,
        ``Received sigquit from a child process``, ``Scheduler watchdog timeout``. Lines after a
        clean stop began (``[shutdown]``, ``Shutting down``, SIGTERM/SIGINT: vLLM's
        ``AsyncLLM output_handler failed ... EngineDeadError`` when the server is interrupted) are
        the shutdown's and are not reported; deaths before the server was ready are EN02. The
        message names the exception behind the death when the log has it.

    Why
        The server stops answering, or answers with errors: every request in flight fails, and
        figures measured after this point are meaningless.

    Fix
        Fix the exception shown (its traceback is at the evidence lines); for CUDA errors and OOMs
        see the memory rules; for watchdog timeouts look for a hung collective (NCCL) or a very long
        step.

    References
        - vLLM ``v1/engine/core_client.py``, ``v1/executor/multiproc_executor.py``
        - SGLang ``run_scheduler_process``, ``utils/watchdog.py``
    """

    code = "EN01"
    slug = "engine-died"
    title = "Engine process died"
    severity = "error"
    confidence = "observed"
    kinds = ("error", "warning", "unparsed")

    def check(self, ctx: Context) -> Iterable[Finding]:
        hits = [h for h in death_hits(ctx) if ctx.phase(h.seq) in ("serving", "unknown")]
        if ctx.ready_seq is None and ctx.first_busy_seq is None:
            hits = [h for h in hits if not shows_startup(ctx)]
        if not hits:
            return []
        first = hits[0]
        when = (
            "while serving"
            if ctx.phase(first.seq) == "serving"
            else "(the log does not show whether it had started serving)"
        )
        msg = f'An engine process died {when}: "{first.text}" (line {first.event.line}'
        msg += f", {first.event.time})." if first.event.time else ")."
        evidence: list[EvidenceItem] = [(first.event, first.text)]
        cause = root_cause(ctx, first.event, first.text)
        if cause is not None:
            needle = cause[1][:60]
            msg += f" Cause: {clip(cause[1]).rstrip('.')} (line {line_of(cause[0], needle)})."
            evidence.append((cause[0], needle))
        evidence += [(h.event, h.text) for h in hits[1:3]]
        fix = (
            "Fix the exception behind it (its traceback is at the evidence lines); for CUDA out-of-memory see the "
            "memory rules; for a watchdog timeout look for a hung collective (NCCL) or an overlong step."
        )
        return [self.finding(msg, fix, [h.event for h in hits], evidence)]

"""EN02: the server failed to start."""

from __future__ import annotations

import re
from collections.abc import Iterable

from logscope.digest.context import Context, Hit
from logscope.digest.finding import EvidenceItem, Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._failures import death_hits, root_cause, shows_startup, uncaught_at_start
from logscope.digest.rules._shared import clip, line_of
from logscope.events import Event

_MODULE = re.compile(r"No module named '([\w.]+)'")


@register
class StartupFailed(Rule):
    """The server failed to start.

    What
        Before the server became ready (before vLLM's ``Application startup complete`` / SGLang's
        ``The server is fired up and ready to roll!``), a line says a process failed: vLLM
        ``EngineCore failed to start``, ``Engine core initialization failed``, ``Worker proc ... died
        unexpectedly``, ``Failed to load model - not enough GPU memory``; SGLang ``Scheduler hit an
        exception``, ``Received sigquit from a child process``; or the log ends in an uncaught
        exception and never shows the server serving. The message names the exception behind it.

    Why
        Nothing was served: the configuration, the environment or the memory budget is wrong. The
        root cause is usually the first exception, not the last line (which is often a relay such
        as ``Engine core initialization failed. See root cause above.``).

    Fix
        Fix the exception named in the message: a KV cache too small for ``--max-model-len`` (see
        KV02), out of memory at load (lower the memory fraction, more GPUs, quantization), a missing
        module (install it into the server's environment), a bad argument.

    References
        - vLLM ``v1/engine/core.py`` ``run_engine_core``, ``v1/engine/utils.py``
        - SGLang ``launch_server`` / ``run_scheduler_process``
    """

    code = "EN02"
    slug = "startup-failed"
    title = "Server failed to start"
    severity = "error"
    confidence = "observed"
    kinds = ("error", "warning", "unparsed", "kv_capacity")

    def check(self, ctx: Context) -> Iterable[Finding]:
        never_served = ctx.ready_seq is None and ctx.first_busy_seq is None
        hits: list[Hit] = [
            h
            for h in death_hits(ctx)
            if ctx.phase(h.seq) == "startup"
            or (never_served and ctx.phase(h.seq) == "unknown" and shows_startup(ctx))
        ]
        first_event: Event | None = hits[0].event if hits else None
        headline = hits[0].text if hits else None
        if first_event is None:
            crash = uncaught_at_start(ctx)
            if crash is not None:
                first_event, headline = crash, "uncaught exception"
        if first_event is None:
            return []
        msg = f'The server failed to start: "{headline}" (line {first_event.line}'
        msg += f", {first_event.time})." if first_event.time else ")."
        evidence: list[EvidenceItem] = [(first_event, headline if hits else None)]
        cause = root_cause(ctx, first_event, headline if hits else None)
        fix = "Fix the exception named above (its traceback is at the evidence lines) and start again."
        if cause is not None:
            needle = cause[1][:60]
            msg += f" Cause: {clip(cause[1]).rstrip('.')} (line {line_of(cause[0], needle)})."
            evidence.append((cause[0], needle))
            fix = _fix_for(ctx, cause[1]) or fix
        evidence += [(h.event, h.text) for h in hits[1:3]]
        return [self.finding(msg, fix, [h.event for h in hits] or [first_event], evidence)]


def _fix_for(ctx: Context, cause: str) -> str | None:
    sglang = ctx.engine == "sglang"
    if "max seq len" in cause or ("KV cache" in cause and "needed" in cause):
        return (
            f"Lower `{'--context-length' if sglang else '--max-model-len'}` to what the KV cache holds or give it "
            f"more memory (see KV02), then start again."
        )
    if "out of memory" in cause.lower() or "OutOfMemoryError" in cause:
        return (
            "Free GPU memory for the weights: lower `--gpu-memory-utilization` / `--mem-fraction-static`, use more "
            "GPUs (tensor parallelism) or a quantized checkpoint, keep other processes off the GPUs."
        )
    m = _MODULE.search(cause)
    if m:
        return (
            f"Install the missing module `{m.group(1)}` into the server's environment (or a build of the engine "
            f"that does not need it), then start again."
        )
    return None

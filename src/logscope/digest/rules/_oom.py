"""What the two OOM rules share: the out-of-memory events of the serving phase, in words."""

from __future__ import annotations

from statistics import median

from logscope.digest.context import Context
from logscope.digest.rules._failures import shows_startup
from logscope.digest.rules._shared import plural, ranks_text
from logscope.events import Event, Oom


def serving_ooms(ctx: Context, retried: bool) -> tuple[list[Event], str]:
    """OOM events after the server was ready (or in a log without start-up), not in a clean shutdown, and
    when they happened in words."""
    # a log that shows the start-up and never shows serving: its OOMs are start-up failures (EN02)
    start_only = ctx.ready_seq is None and ctx.first_busy_seq is None and shows_startup(ctx)
    allowed = ("serving",) if start_only else ("serving", "unknown")
    picked = [
        (i, e)
        for i, e in ctx.of_kind("oom")
        if bool(getattr(e, "retry", False)) == retried and ctx.phase(i) in allowed
    ]
    phases = {ctx.phase(i) for i, _e in picked}
    when = (
        "while serving" if phases == {"serving"} else "(the log does not show when the server became ready)"
    )
    return [e for _i, e in picked], when


def describe(events: list[Event], when: str, what: str, many: str | None = None) -> str:
    n = sum(e.repeated for e in events)
    ooms = [e for e in events if isinstance(e, Oom)]
    req = [e.requested_gib for e in ooms if e.requested_gib is not None]
    free = [e.free_gib for e in ooms if e.free_gib is not None]
    first = events[0]
    text = f"{plural(n, what, many)}{ranks_text(events)}"
    ranks = {(e.dp_rank, e.tp_rank) for e in events if e.tp_rank is not None}
    if len(ranks) > 1 and n % len(ranks) == 0 and n > len(ranks):
        text += f" ({n // len(ranks)} rounds x {len(ranks)} ranks)"
    text += f" {when}, {'first at' if n > 1 else 'at'} line {first.line}" + (
        f" ({first.time})" if first.time else ""
    )
    if req:
        text += f": {'it' if n == 1 else 'each'} asked for {median(req):.2f} GiB"
        if free:
            text += f" with {median(free):.2f} GiB free"
    return text

"""CV01: lines that look like a known kind were not understood (a new format?)."""

from __future__ import annotations

from collections.abc import Iterable

from logscope.digest.context import Context
from logscope.digest.finding import Finding
from logscope.digest.registry import Rule, register
from logscope.digest.rules._shared import plural
from logscope.events import Event

MIN_LINES = 10  # this many not-understood lines of one kind are worth a look whatever the share
MIN_SHARE = 0.05  # or this share of the kind's lines


@register
class LinesNotUnderstood(Rule):
    """Lines that carry a known kind's marker were not understood.

    What
        Every message grammar has anchors, literals that every line of its kind contains
        (``Avg prompt throughput``, ``Decode batch``, ``KV cache size:``). A line that holds an anchor
        but that no grammar could read is kept as ``unparsed`` with the kind it resembles
        (``logscope coverage`` lists them). The rule fires per kind when 10 or more such lines, or
        5 % or more of that kind's lines, were not understood.

    Why
        The figures built on that kind (decode rates, KV pool, spec decode, ...) miss those lines and
        may be wrong or incomplete; often the engine version prints a format logscope does not know
        yet, or the log was damaged (clipped columns, glued lines).

    Fix
        Run ``logscope coverage LOG`` to see the lines; if the engine prints a new format, report it
        to logscope with a few sample lines; if the log was clipped or wrapped, collect it again
        from the source (``docker logs``, the file) rather than a terminal.

    References
        - ``logscope coverage`` (docs/guide.md)
    """

    code = "CV01"
    slug = "lines-not-understood"
    title = "Lines of a known kind not understood"
    severity = "info"
    confidence = "observed"
    kinds = ("unparsed",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        by_kind: dict[str, list[Event]] = {}
        for _i, e in ctx.of_kind("unparsed"):
            kind = getattr(e, "candidate", None)
            if kind:
                by_kind.setdefault(str(kind), []).append(e)
        out: list[Finding] = []
        for kind, events in sorted(by_kind.items()):
            n = len(events)
            parsed = len(ctx.of_kind(kind))
            share = n / (n + parsed)
            if n < MIN_LINES and share < MIN_SHARE:
                continue
            msg = (
                f"{plural(n, 'line')} {'looks' if n == 1 else 'look'} like `{kind}` lines but {'was' if n == 1 else 'were'} "
                f"not understood ({100 * share:.0f} % of that "
                f"kind's {n + parsed:,} lines; first at line {events[0].line}): figures built on `{kind}` may miss "
                f"them."
            )
            fix = (
                "Run `logscope coverage LOG` to see them; if the engine prints a new format, report it with a few "
                "sample lines; if the log was clipped or wrapped, collect it again from the source."
            )
            out.append(self.finding(msg, fix, events, events))
        return out

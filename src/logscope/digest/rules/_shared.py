"""Helpers the rules share: wording of counts, ranks and numbers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from logscope.digest.context import Context, Hit
from logscope.digest.finding import RAY_COPIES, count_ranks, evidence_of
from logscope.events import Event

_TP = re.compile(r"^TP(\d+)$")
_RANK = re.compile(r"^(?:DP\d+)?(?: ?TP\d+)?$")


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def ranks_text(events: Iterable[Event]) -> str:
    """``on 8 ranks (TP0-TP7)``, ``on TP0``, ``in 2 processes (APIServer pid=1, EngineCore pid=5)``, or ''."""
    _n, ranks = count_ranks(events)
    labels = [k for k in ranks if k != RAY_COPIES]
    extra = f" and {ranks[RAY_COPIES]:,} more workers (Ray-deduplicated)" if RAY_COPIES in ranks else ""
    if not labels or labels == ["main"]:
        return f", {ranks[RAY_COPIES]:,} of them Ray-deduplicated copies" if extra else ""
    tps = [int(m.group(1)) for m in (_TP.match(k) for k in labels) if m]
    if len(tps) == len(labels) and len(tps) > 1:
        tps.sort()
        span = (
            f"TP{tps[0]}-TP{tps[-1]}"
            if tps == list(range(tps[0], tps[-1] + 1))
            else ", ".join(f"TP{t}" for t in tps)
        )
        return f" on {len(tps)} ranks ({span}){extra}"
    if len(labels) == 1:
        return f" on {labels[0]}{extra}"
    shown = ", ".join(labels[:4]) + (", ..." if len(labels) > 4 else "")
    if all(_RANK.match(k) for k in labels):
        return f" on {len(labels)} ranks ({shown}){extra}"
    return f" in {len(labels)} processes ({shown}){extra}"


def where(e: Event) -> str:
    """``line 12, 10-18 17:19:45`` (the time when printed)."""
    return f"line {e.line}" + (f", {e.time}" if e.time else "")


def hits_events(hits: Sequence[Hit]) -> list[Event]:
    return [h.event for h in hits]


def serving(ctx: Context, seq: int) -> bool:
    """The line is not from start-up nor from a clean shutdown (``unknown`` counts: the log may start mid-run)."""
    return ctx.phase(seq) in ("serving", "unknown")


def line_of(e: Event, needle: str | None = None) -> int:
    """The physical line of ``e`` that holds ``needle`` (see ``evidence_of``)."""
    return evidence_of(e, needle).line


def clip(text: str, limit: int = 240) -> str:
    """``text`` cut to ``limit`` characters, at a sentence end when there is one past the middle."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(". ", limit // 2, limit)
    return text[: cut + 1] if cut > 0 else text[: limit - 3].rstrip() + "..."

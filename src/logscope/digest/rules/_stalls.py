"""What the stall rules (ST01-ST03) share: the spans of one kind, worded as one finding."""

from __future__ import annotations

from typing import Any

from logscope.digest.context import Context


def spans_of(ctx: Context, kind: str) -> list[Any]:
    """The ``stalls`` analysis's spans of ``kind``, longest first."""
    res = ctx.analysis("stalls")
    spans = [s for s in getattr(res, "spans", []) if s.kind == kind]
    return sorted(spans, key=lambda s: (-s.duration_s, s.start_t_s))


def where(s: Any) -> str:
    """``lines 4-10 (14:21:12 -> 14:21:59, 47 s, TP0)``."""
    lines = f"lines {s.start_line}-{s.end_line}" if s.end_line != s.start_line else f"line {s.start_line}"
    times = f"{s.start_time} -> {s.end_time}, " if s.start_time and s.end_time else ""
    d = s.duration_s
    took = f"{d:.0f} s" if d < 120 else f"{d / 60:.1f} min" if d < 7200 else f"{d / 3600:.1f} h"
    return f"{lines} ({times}{took}, {s.engine})"


def others(spans: list[Any]) -> str:
    """`` 2 more such spans: lines 40-52, lines 90-99.`` or ''."""
    if len(spans) < 2:
        return ""
    rest = spans[1:]
    shown = ", ".join(where(s) for s in rest[:3]) + (", ..." if len(rest) > 3 else "")
    return f" {len(rest)} more such span(s): {shown}."

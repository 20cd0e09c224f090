"""Terminal summary of a run (rich)."""

from __future__ import annotations

from typing import Any

from logscope.api import Run


def summary(run: Run) -> dict[str, Any]:
    """Engine, version, time span, ranks, counts per kind."""
    versions = [getattr(e, "engine_version", None) for e in run.events if e.kind == "version"]
    times = [e for e in run.events if e.t_s is not None]
    tp = sorted({e.tp_rank for e in run.events if e.tp_rank is not None})
    dp = sorted({e.dp_rank for e in run.events if e.dp_rank is not None})
    return {
        "engine": run.engine,
        "engine_version": next((v for v in versions if v), None),
        "files": run.files,
        "lines": run.stats.lines,
        "first_time": times[0].time if times else None,
        "last_time": times[-1].time if times else None,
        "span_s": (times[-1].t_s or 0) - (times[0].t_s or 0) if times else None,
        "tp_ranks": tp,
        "dp_ranks": dp,
        "counts": run.counts(),
        "notes": run.stats.notes,
    }


def render_summary(data: dict[str, Any], output: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    fh = open(output, "w", encoding="utf-8") if output else None  # noqa: SIM115
    try:
        con = Console(file=fh) if fh else Console()
        con.print(f"[bold]logscope[/bold] {', '.join(data['files'])}")
        con.print(f"engine: {data['engine'] or 'unknown'} {data['engine_version'] or ''}  lines: {data['lines']}")
        if data["first_time"]:
            con.print(f"time: {data['first_time']} → {data['last_time']} ({data['span_s']:.0f} s)")
        if data["tp_ranks"]:
            con.print(f"TP ranks: {data['tp_ranks']}")
        t = Table("kind", "events")
        for k, v in sorted(data["counts"].items(), key=lambda kv: -kv[1]):
            t.add_row(k, str(v))
        con.print(t)
    finally:
        if fh:
            fh.close()

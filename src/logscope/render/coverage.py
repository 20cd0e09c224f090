"""What was and was not understood: lines per kind, unparsed lines grouped by template."""

from __future__ import annotations

from collections import Counter
from typing import Any

from logscope.api import Run
from logscope.parsers.pipeline import template


def coverage_report(run: Run, top: int = 15) -> dict[str, Any]:
    """Counts per kind, unparsed totals, candidates (unparsed lines that look like a known kind)."""
    counts = run.counts()
    unparsed = [e for e in run.events if e.kind == "unparsed"]
    blank = sum(1 for e in unparsed if not getattr(e, "text", "").strip())
    candidates = [e for e in unparsed if getattr(e, "candidate", None)]
    templates = Counter(template(getattr(e, "text", "")) for e in unparsed if getattr(e, "text", "").strip())
    return {
        "files": run.files,
        "engine": run.engine,
        "lines": run.stats.lines,
        "events": sum(v for k, v in counts.items() if k != "unparsed"),
        "unparsed": len(unparsed),
        "blank": blank,
        "unparsed_candidates": len(candidates),
        "kinds": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        "candidates": [
            {
                "file": e.file,
                "line": e.line,
                "kind": getattr(e, "candidate", None),
                "text": getattr(e, "text", "")[:300],
            }
            for e in candidates[:top]
        ],
        "top_unparsed": [{"count": n, "template": t} for t, n in templates.most_common(top)],
        "notes": run.stats.notes,
    }


def render_coverage(rep: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    con.print(
        f"[bold]{', '.join(rep['files'])}[/bold]  engine: {rep['engine'] or 'unknown'}  "
        f"lines: {rep['lines']}  events: {rep['events']}  unparsed: {rep['unparsed']} "
        f"({rep['blank']} blank)  look like a known kind: {rep['unparsed_candidates']}"
    )
    t = Table("kind", "events", title="Events per kind")
    for k, v in rep["kinds"].items():
        t.add_row(k, str(v))
    con.print(t)
    if rep["candidates"]:
        c = Table(
            "line", "looks like", "text", title="Unparsed lines that look like a known kind (new format?)"
        )
        for row in rep["candidates"]:
            c.add_row(
                str(row["line"]),
                str(row["kind"]),
                row["text"],
            )
        con.print(c)
    if rep["top_unparsed"]:
        u = Table("count", "template", title="Most frequent unparsed lines")
        for row in rep["top_unparsed"]:
            u.add_row(str(row["count"]), row["template"])
        con.print(u)
    for n in rep["notes"]:
        con.print(f"[yellow]note:[/yellow] {n}")

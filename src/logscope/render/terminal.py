"""The terminal report (rich): summary table, findings, one table per section.

Written to a ``rich.console.Console`` given by the caller (the CLI's stdout, or a fixed-width string
console in tests). Log text goes in as ``rich.text.Text``, never as markup, so a line holding
``[bold]`` or ``[link=...]`` prints as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from logscope.analyses.report import Report
from logscope.render.content import report_doc
from logscope.render.doc import Block, Code, FigureRef, Finding, Heading, Inline, Para, Table, clean

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

SEVERITY_STYLE = {"error": "bold white on red", "critical": "bold white on red", "warning": "bold black on yellow",
                  "warn": "bold black on yellow", "info": "bold white on blue"}
PARA_STYLE = {"p": "", "note": "dim", "method": "dim", "na": "italic dim", "warn": "yellow", "meta": "dim"}


def _text(spans: Inline, base: str = "") -> Text:
    from rich.text import Text

    out = Text(style=base)
    for sp in spans:
        style = {"code": "cyan", "bold": "bold"}.get(sp.style, "")
        out.append(clean(sp.text), style=style)
    return out


def _renderables(bl: Block) -> list[RenderableType]:
    from rich import box
    from rich.panel import Panel
    from rich.rule import Rule
    from rich.table import Table as RichTable
    from rich.text import Text

    if isinstance(bl, Heading):
        if bl.level == 1:
            return [_text(bl.text, "bold underline")]
        return [Text(""), Rule(_text(bl.text, "bold"), align="left", style="dim")]
    if isinstance(bl, Para):
        prefix = Text("! ", style="yellow") if bl.kind == "warn" else Text("")
        return [prefix + _text(bl.inline, PARA_STYLE.get(bl.kind, ""))]
    if isinstance(bl, Table):
        tb = RichTable(box=box.SIMPLE_HEAD, show_header=not bl.key_value and any(bl.header), show_edge=False,
                       pad_edge=False, header_style="bold")
        for i, h in enumerate(bl.header):
            numeric = i < len(bl.numeric) and bl.numeric[i]
            tb.add_column(Text(h), justify="right" if numeric else "left",
                          style="bold" if bl.key_value and i == 0 else None, no_wrap=bl.key_value and i == 0)
        for row in bl.rows:
            tb.add_row(*(_text(cell) for cell in row))
        return [tb] if bl.key_value else [Text(""), tb]
    if isinstance(bl, Code):
        return [Panel(Text("\n".join(clean(x) for x in bl.lines)), box=box.SQUARE, border_style="dim",
                      title=Text("evidence"), title_align="left")]
    if isinstance(bl, FigureRef):
        return []
    if isinstance(bl, Finding):
        head = Text.assemble((f" {bl.severity.upper()} ", SEVERITY_STYLE.get(bl.severity, "reverse")), " ",
                             (bl.code, "bold cyan"), " ", (bl.title, "bold"))
        out: list[RenderableType] = [Text(""), head]
        for p in bl.body:
            out += _renderables(p)
        return out
    raise TypeError(f"unknown block {bl!r}")


def render_blocks(blocks: list[Block], console: Console) -> None:
    for bl in blocks:
        for r in _renderables(bl):
            console.print(r)


def render_terminal(report: Report, console: Console, *, level: int = 1) -> None:
    """Print the report on ``console`` (level 1: detail tables capped; 0: everything)."""
    render_blocks(report_doc(report, level), console)


def render_compare_terminal(comparison: Any, console: Console, *, level: int = 1) -> None:
    from logscope.render.compare_doc import compare_doc

    render_blocks(compare_doc(comparison, level), console)

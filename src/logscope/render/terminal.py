"""The terminal report (rich): summary table, findings, one table per section.

Written to a ``rich.console.Console`` given by the caller (the CLI's stdout, or a fixed-width string
console in tests). Log text goes in as ``rich.text.Text``, never as markup, so a line holding
``[bold]`` or ``[link=...]`` prints as it is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from logscope.analyses.report import Report
from logscope.render.content import report_doc
from logscope.render.doc import Block, Code, FigureRef, Finding, Heading, Inline, Para, Table, clean

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

SEVERITY_STYLE = {
    "error": "bold white on red",
    "critical": "bold white on red",
    "warning": "bold black on yellow",
    "warn": "bold black on yellow",
    "info": "bold white on blue",
}
PARA_STYLE = {"p": "", "note": "dim", "method": "dim", "na": "italic dim", "warn": "yellow", "meta": "dim"}


def _text(spans: Inline, base: str = "", fit: int | None = None) -> Text:
    """``spans`` as rich Text; with ``fit``, words wider than ``fit`` keep their end (``fit_words``)."""
    from rich.text import Text

    out = Text(style=base)
    for sp in spans:
        style = {"code": "cyan", "bold": "bold"}.get(sp.style, "")
        text = clean(sp.text)
        out.append(fit_words(text, fit) if fit else text, style=style)
    return out


GAP = 3  # what a column takes beside its text in the tables below: a space each side and the divider


def _longest_word(cells: list[str], cap: int | None = None) -> int:
    longest = max((len(w) for s in cells for w in s.split()), default=0)
    return min(longest, cap) if cap else longest


def word_cap(width: int) -> int:
    """The widest word a table cell keeps whole at ``width`` columns (wider ones keep their end): two
    columns always fit side by side (a long path as a row's key leaves room for its value)."""
    return max(12, width // 2 - GAP)


def table_parts(bl: Table, width: int) -> list[list[int]]:
    """The columns of ``bl`` in groups that each fit ``width`` without breaking a word: all of them when
    they fit; else the first column (the row's key) and as many of the next as fit, again for the rest
    (the table folds: its right part comes below, keyed by the same first column). A column needs its
    longest word."""
    from logscope.render.doc import plain

    n = len(bl.header)
    cap = word_cap(width)
    need = [
        _longest_word([bl.header[i], *(plain(row[i]) for row in bl.rows if i < len(row))], cap) + GAP
        for i in range(n)
    ]
    if n <= 2 or sum(need) <= width:
        return [list(range(n))]
    parts: list[list[int]] = []
    cur, used = [0], need[0]
    for i in range(1, n):
        if used + need[i] > width and len(cur) > 1:
            parts.append(cur)
            cur, used = [0], need[0]
        cur.append(i)
        used += need[i]
    parts.append(cur)
    return parts


def column_widths(bl: Table, cols: list[int], width: int) -> list[int] | None:
    """Widths for the columns ``cols`` of ``bl`` within ``width``: None when every cell fits on one line
    (rich lays it out then); else each column's widest line, the widest columns narrowed first but
    never below their longest word (rich's own narrowing cuts words: "acceptan…")."""
    from logscope.render.doc import plain

    cap = word_cap(width)
    texts = [
        [bl.header[i], *(fit_words(plain(row[i]), cap) for row in bl.rows if i < len(row))] for i in cols
    ]
    natural = [max((len(ln) for s in col for ln in s.split("\n")), default=0) for col in texts]
    room = width - GAP * (len(cols) - 1)
    if sum(natural) <= room:
        return None
    least = [max(1, _longest_word(col, cap)) for col in texts]
    widths = list(natural)
    while sum(widths) > room:
        k = max(
            (j for j in range(len(widths)) if widths[j] > least[j]), key=lambda j: widths[j], default=None
        )
        if k is None:
            break  # a word wider than the screen: rich cuts it
        widths[k] -= 1
    return widths


def fit_words(text: str, width: int) -> str:
    """``text`` with each word wider than ``width`` shortened from its start (``…/srt/layers/fp8_utils.py:318:``):
    a path's end says most. Cut after a ``/`` where one falls in the part kept."""
    if width < 8 or all(len(w) <= width for w in text.split()):
        return text

    def short(m: re.Match[str]) -> str:
        word = m.group(0)
        if len(word) <= width:
            return word
        tail = word[len(word) - (width - 1) :]
        slash = tail.find("/")
        return "…" + (tail[slash:] if 0 <= slash < len(tail) - 8 else tail)

    return re.sub(r"\S+", short, text)


def _renderables(bl: Block, width: int = 10_000) -> list[RenderableType]:
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
        # two columns spare: a punctuation mark after a shortened word stays on its line
        return [prefix + _text(bl.inline, PARA_STYLE.get(bl.kind, ""), fit=width - len(prefix) - 2)]
    if isinstance(bl, Table):
        out_tables: list[RenderableType] = []
        if bl.key_value:  # the value column holds what the key column (never wrapped) leaves
            from logscope.render.doc import plain

            key_width = max((len(plain(row[0])) for row in bl.rows if row), default=0)
            fit = max(12, width - key_width - GAP)
        else:
            fit = word_cap(width)
        for cols in [list(range(len(bl.header)))] if bl.key_value else table_parts(bl, width):
            tb = RichTable(
                box=box.SIMPLE_HEAD,
                show_header=not bl.key_value and any(bl.header),
                show_edge=False,
                pad_edge=False,
                header_style="bold",
            )
            widths = None if bl.key_value else column_widths(bl, cols, width)
            for k, i in enumerate(cols):
                numeric = i < len(bl.numeric) and bl.numeric[i]
                tb.add_column(
                    Text(bl.header[i]),
                    justify="right" if numeric else "left",
                    style="bold" if bl.key_value and i == 0 else None,
                    no_wrap=bl.key_value and i == 0,
                    width=widths[k] if widths else None,
                )
            for row in bl.rows:
                tb.add_row(*(_text(row[i], fit=fit) if i < len(row) else Text("") for i in cols))
            out_tables += [tb] if bl.key_value else [Text(""), tb]
        return out_tables
    if isinstance(bl, Code):
        return [
            Panel(
                Text("\n".join(fit_words(clean(x), width - 4) for x in bl.lines)),
                box=box.SQUARE,
                border_style="dim",
                title=Text("evidence"),
                title_align="left",
            )
        ]
    if isinstance(bl, FigureRef):
        return []
    if isinstance(bl, Finding):
        head = Text.assemble(
            (f" {bl.severity.upper()} ", SEVERITY_STYLE.get(bl.severity, "reverse")),
            " ",
            (bl.code, "bold cyan"),
            " ",
            (bl.title, "bold"),
        )
        out: list[RenderableType] = [Text(""), head]
        for p in bl.body:
            out += _renderables(p, width)
        return out
    raise TypeError(f"unknown block {bl!r}")


def render_blocks(blocks: list[Block], console: Console) -> None:
    for bl in blocks:
        for r in _renderables(bl, console.width):
            console.print(r)


def render_terminal(report: Report, console: Console, *, level: int = 1) -> None:
    """Print the report on ``console`` (level 1: detail tables capped; 0: everything)."""
    render_blocks(report_doc(report, level), console)


def render_compare_terminal(comparison: Any, console: Console, *, level: int = 1) -> None:
    from logscope.render.compare_doc import compare_doc

    render_blocks(compare_doc(comparison, level), console)

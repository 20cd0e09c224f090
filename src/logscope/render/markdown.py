"""Markdown for tickets (GitHub-flavoured): summary table first, then findings with their evidence in
fenced code blocks, then one section per analysis with its method.

Log text is untrusted: it only ever appears inside code spans or fenced blocks whose backtick fence
is longer than any backtick run in it, so a line holding ``</code>``, ``<script>``, a Markdown link
or an ``@mention`` renders as text. Our own prose is escaped too (``&``, ``<``, ``>`` as entities,
Markdown punctuation with a backslash). A report larger than GitHub's comment limit is written again
at a lower level of detail (``render.content``) until it fits, never cut mid-table.
"""

from __future__ import annotations

import re
from typing import Any

from logscope.analyses.report import Report
from logscope.render.content import LEVELS, report_doc, sorted_findings
from logscope.render.doc import Block, Code, FigureRef, Finding, Heading, Inline, Para, Table, clean

GITHUB_LIMIT = 65_536  # characters in an issue or pull-request comment
DEFAULT_LIMIT = 65_000  # with room for a line of the user's own above it
WHY = "to fit a GitHub comment"

# `_` only where it could open or close emphasis (not between two letters or digits)
_PUNCT = re.compile(r"([\\`*\[\]|~]|(?<![^\W_])_|_(?![^\W_]))")
_ENTITY = re.compile(r"&(?=#?\w+;)")
_BACKTICKS = re.compile(r"`+")
_MENTION = re.compile(r"@(?=\w)")
_BLOCK_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")


def _longest_run(s: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICKS.finditer(s)), default=0)


def escape(text: str) -> str:
    """Prose for Markdown, one line: ``<`` and entity-like ``&`` as entities (no HTML, no autolinks), Markdown
    punctuation escaped where it could mean something (``>`` only starts a quote at a line's start, which
    ``_para_text`` handles)."""
    s = " ".join(clean(text).split("\n"))
    s = _ENTITY.sub("&amp;", s).replace("<", "&lt;")
    s = _MENTION.sub("@\u200b", s)  # no @mention pings from a pasted report
    return _PUNCT.sub(r"\\\1", s)


def code_span(text: str) -> str:
    """Literal text as an inline code span (fence longer than any backtick run inside)."""
    s = " ".join(clean(text).split("\n"))
    if not s:
        return ""
    fence = "`" * (_longest_run(s) + 1)
    if s.startswith("`") or s.endswith("`") or s.strip() == "" or (s.startswith(" ") and s.endswith(" ")):
        s = f" {s} "
    return f"{fence}{s}{fence}"


def code_block(lines: list[str], info: str = "text") -> str:
    body = "\n".join(clean(x) for x in lines)
    fence = "`" * max(3, _longest_run(body) + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def inline(spans: Inline, *, in_table: bool = False) -> str:
    out = []
    for sp in spans:
        if sp.style == "code":
            s = code_span(sp.text)
        elif sp.style == "bold":
            core = sp.text.strip()
            lead, trail = sp.text[: len(sp.text) - len(sp.text.lstrip())], sp.text[len(sp.text.rstrip()) :]
            s = f"{lead}**{escape(core)}**{trail}" if core else escape(sp.text)
        else:
            s = escape(sp.text)
        out.append(s)
    text = "".join(out)
    if in_table:
        # GFM splits cells on every unescaped pipe, even inside code spans; escaped ones stay pipes
        text = re.sub(r"(?<!\\)\|", r"\\|", text)
    return text


def _para_text(spans: Inline) -> str:
    s = inline(spans).lstrip()  # four leading spaces would make an indented code block
    m = _BLOCK_START.match(s)
    if m:  # a paragraph must not start a heading, quote, list or setext underline by accident
        s = s[: m.start(2)] + "\\" + s[m.start(2) :]
    return s


def _table(tb: Table) -> str:
    n = len(tb.header)
    head = "| " + " | ".join(escape(h) for h in tb.header) + " |" if any(tb.header) else "|" + " |" * n
    align = [("---:" if i < len(tb.numeric) and tb.numeric[i] else "---") for i in range(n)]
    rows = [head, "|" + "|".join(align) + "|"]
    for row in tb.rows:
        cells = [inline(cell, in_table=True) for cell in row] + [""] * (n - len(row))
        rows.append("| " + " | ".join(x if x else " " for x in cells[:n]) + " |")
    return "\n".join(rows)


SEVERITY_MARK = {"error": "🔴", "critical": "🔴", "warning": "🟠", "warn": "🟠", "info": "🔵"}


def _block(bl: Block) -> str | None:
    if isinstance(bl, Heading):
        return "#" * bl.level + " " + inline(bl.text)
    if isinstance(bl, Para):
        s = _para_text(bl.inline)
        if bl.kind == "note":
            return "> " + s
        if bl.kind == "warn":
            return "> **Warning:** " + s
        if bl.kind == "na":
            return f"_{s}_" if s else s
        return s
    if isinstance(bl, Table):
        return _table(bl)
    if isinstance(bl, Code):
        return code_block(bl.lines)
    if isinstance(bl, FigureRef):
        return None
    if isinstance(bl, Finding):
        mark = SEVERITY_MARK.get(bl.severity, "⚪")
        head = f"### {mark} {escape(bl.severity)} {code_span(bl.code)}: {escape(bl.title)}"
        parts = [head] + [x for x in (_block(p) for p in bl.body) if x]
        return "\n\n".join(parts)
    raise TypeError(f"unknown block {bl!r}")


def render_blocks(blocks: list[Block]) -> str:
    return "\n\n".join(x for x in (_block(bl) for bl in blocks) if x) + "\n"


def size(text: str) -> int:
    """Length as GitHub counts it (UTF-16 code units, so an emoji counts two)."""
    return len(text.encode("utf-16-le")) // 2


def render_markdown(
    report: Report,
    *,
    limit: int | None = DEFAULT_LIMIT,
    level: int | None = None,
    skipped_figures: dict[str, str] | None = None,
) -> str:
    """The report as Markdown. With ``limit``, the most detailed level that fits (see ``render.content``)."""
    fs = sorted_findings(report.findings)

    def at(lv: int, max_findings: int | None = None) -> str:
        return render_blocks(
            report_doc(
                report,
                lv,
                skipped_figures=skipped_figures if lv == 0 else None,
                summarised=WHY,
                findings=fs,
                max_findings=max_findings,
            )
        )

    if level is not None:
        return at(level)
    text = ""
    for lv in range(LEVELS):
        text = at(lv)
        if limit is None or size(text) <= limit:
            return text
    lo, hi = 0, len(fs)
    while lo < hi:  # the most findings whose one-line table still fits
        mid = (lo + hi + 1) // 2
        if size(at(LEVELS - 1, mid)) <= (limit or 0):
            lo = mid
        else:
            hi = mid - 1
    return at(LEVELS - 1, lo)


def render_compare_markdown(comparison: Any, *, limit: int | None = DEFAULT_LIMIT) -> str:
    from logscope.render.compare_doc import compare_doc

    text = ""
    for lv in range(3):
        text = render_blocks(compare_doc(comparison, lv, summarised=WHY))
        if limit is None or size(text) <= limit:
            break
    return text


__all__ = [
    "DEFAULT_LIMIT",
    "GITHUB_LIMIT",
    "code_block",
    "code_span",
    "escape",
    "render_compare_markdown",
    "render_markdown",
    "size",
]

"""A small document model shared by the Markdown, HTML and terminal renderers.

``content`` decides what a report says, as a list of blocks; each renderer decides how to write
them and how to escape. Text is kept in spans that say where it came from:

- ``text``: our own prose. Escaped by every renderer; URLs, ``@mentions`` and ``#123`` references
  in it are turned into code spans by ``prose`` so that no renderer makes a link or a ping of them.
- ``code``: anything that may come from the log (file names, evidence, messages, configuration
  values). Always written literally: a code span or block in Markdown, escaped ``<code>`` in HTML,
  a ``rich.text.Text`` on the terminal (never markup).
- ``bold``: our own emphasis (labels), escaped like ``text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

Style = Literal["text", "code", "bold"]


@dataclass(frozen=True)
class Span:
    text: str
    style: Style = "text"


Inline = tuple[Span, ...]


def t(text: str) -> Span:
    return Span(text, "text")


def c(text: object) -> Span:
    return Span(str(text), "code")


def b(text: str) -> Span:
    return Span(text, "bold")


# what must never become a link or a mention when written as prose
_LINKY = re.compile(
    r"`[^`\n]*`"  # an intended code span
    r"|(?:[A-Za-z][A-Za-z0-9+.-]{1,15}://|www\.)[^\s<>`]*"  # URLs, www.
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail addresses
    r"|(?<![\w`])[@#][\w/.-]+"  # @mentions, #123 references
)


@lru_cache(maxsize=4096)
def prose(text: str) -> Inline:
    """Our prose (a method, a reason) as spans: backticked parts and link-like words become code."""
    out: list[Span] = []
    pos = 0
    for m in _LINKY.finditer(text):
        if m.start() > pos:
            out.append(t(text[pos : m.start()]))
        s = m.group(0)
        out.append(c(s[1:-1] if s.startswith("`") and s.endswith("`") and len(s) >= 2 else s))
        pos = m.end()
    if pos < len(text):
        out.append(t(text[pos:]))
    return tuple(s for s in out if s.text)


def plain(inline: Inline) -> str:
    return "".join(s.text for s in inline)


Cell = Inline


@dataclass
class Heading:
    level: int
    text: Inline
    anchor: str = ""


@dataclass
class Para:
    inline: Inline
    kind: Literal["p", "note", "method", "na", "warn", "meta"] = "p"


@dataclass
class Table:
    header: tuple[str, ...]
    rows: list[tuple[Cell, ...]]
    numeric: tuple[bool, ...] = ()
    key_value: bool = False


@dataclass
class Code:
    """Literal lines (evidence from the log)."""

    lines: list[str]


@dataclass
class FigureRef:
    """Where a run's figure goes (HTML only)."""

    names: tuple[str, ...]


@dataclass
class Finding:
    severity: str
    code: str
    title: str
    body: list[Para | Code | Table] = field(default_factory=list)


Block = Heading | Para | Table | Code | FigureRef | Finding

# C0 and C1 controls (U+0080-U+009F: CSI, OSC, DCS in 8-bit form, which some terminals obey), line and bidi marks
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str, limit: int | None = None) -> str:
    """One line of untrusted text for display: control and bidi characters made visible, length capped
    (``elide``)."""
    s = _CONTROL.sub("\ufffd", text.replace("\t", "    ").replace("\r\n", "\n").replace("\r", "\n"))
    return elide(s, limit) if limit is not None else s


def elide(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a word's end, then `` …`` (the whole text is in the
    JSON report). A first word longer than half the limit is cut inside, at the limit."""
    if len(text) <= limit:
        return text
    cut = max(text.rfind(" ", 0, limit + 1), text.rfind("\n", 0, limit + 1))
    if cut < limit // 2:
        cut = limit
    return text[:cut].rstrip() + " …"

"""The rule reference, generated from the rules' docstrings: one Markdown page per rule and an index.

``docs/rules/`` holds the output; a test fails when it is stale (``pytest --update-goldens``
rewrites it). ``logscope rules [CODE]`` prints the same text.
"""

from __future__ import annotations

import re

from logscope.digest.registry import SECTIONS, Rule, all_rules

_RST_CODE = re.compile(r"``([^`]+)``")


def _md(text: str) -> str:
    """Docstring text (reStructuredText-style ``code``) as Markdown."""
    return _RST_CODE.sub(r"`\1`", text)


def _reads(cls: type[Rule]) -> str:
    parts = []
    if cls.requires:
        parts.append("analyses: " + ", ".join(f"`{a}`" for a in cls.requires))
    if cls.kinds:
        parts.append("events: " + ", ".join(f"`{k}`" for k in cls.kinds))
    return "; ".join(parts) or "every line of the log"


def rule_page(cls: type[Rule]) -> str:
    """The Markdown page of one rule."""
    doc = cls.doc()
    out = [
        f"# {cls.code} `{cls.slug}`: {cls.title}",
        "",
        "<!-- generated from the rule's docstring (src/logscope/digest/rules/); do not edit -->",
        "",
        f"{_md(doc['summary'])}",
        "",
        "| severity | confidence | engines | reads |",
        "|---|---|---|---|",
        f"| {cls.severity} | {cls.confidence} | {', '.join(cls.engines)} | {_reads(cls)} |",
    ]
    for section in SECTIONS:
        out += ["", f"## {section}", "", _md(doc[section])]
    return "\n".join(out) + "\n"


def index_page() -> str:
    """The Markdown index of every rule."""
    out = [
        "# Digest rules",
        "",
        "<!-- generated from the rules' docstrings (src/logscope/digest/rules/); do not edit -->",
        "",
        "Each finding of `logscope analyze` comes from one of these rules. A rule reports a problem once, with its",
        "severity, its confidence (`observed`: the log says it; `inferred`: derived from the log's numbers by the",
        "method its page describes; `heuristic`: a threshold that can be wrong), the numbers, the fix and the lines",
        "that prove it. A rule whose inputs the log lacks reports nothing: no finding is not an all-clear.",
        "`logscope analyze --fail-on warning` exits 1 when a finding is at or above that severity.",
        "Codes are never reused.",
        "",
        "| code | slug | severity | confidence | title |",
        "|---|---|---|---|---|",
    ]
    for cls in all_rules():
        out.append(
            f"| [{cls.code}]({cls.code}.md) | `{cls.slug}` | {cls.severity} | {cls.confidence} | {cls.title} |"
        )
    return "\n".join(out) + "\n"


def pages() -> dict[str, str]:
    """File name -> content of every page of ``docs/rules/``."""
    out = {"index.md": index_page()}
    for cls in all_rules():
        out[f"{cls.code}.md"] = rule_page(cls)
    return out


def rules_table() -> str:
    """The rules as plain-text columns (``logscope rules``)."""
    rows = [("CODE", "SEVERITY", "CONFIDENCE", "SLUG", "TITLE")]
    rows += [(c.code, c.severity, c.confidence, c.slug, c.title) for c in all_rules()]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r[:4], widths, strict=True)) + "  " + r[4] for r in rows]
    lines.append("")
    lines.append("`logscope rules CODE` shows a rule's documentation.")
    return "\n".join(lines)


__all__ = ["index_page", "pages", "rule_page", "rules_table"]

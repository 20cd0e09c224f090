"""A finding: one problem of the run, once, with how bad it is, how sure we are, and the proof.

Flat like a linter's record (ruff, pylint): the rule's code and slug, severity, confidence, a title, a
message with the numbers, separate fix advice, how often the log shows it (``count``, a Ray
``[repeated Nx across cluster]`` line counting N + 1) and on which ranks, and the evidence lines.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import Evidence
from logscope.events import Event

Severity = Literal["error", "warning", "info"]
Confidence = Literal["observed", "inferred", "heuristic"]

SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
CONFIDENCES: tuple[Confidence, ...] = ("observed", "inferred", "heuristic")
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}

MAX_EVIDENCE = 5
MAX_TEXT = 500
RAY_COPIES = "other ranks (Ray dedup)"


class Finding(BaseModel):
    """One problem found in the run (docs/contract.md, ``report.findings``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    slug: str
    severity: Severity
    confidence: Confidence = Field(
        description="observed: the log says it; inferred: derived from the log's numbers by a stated method; "
        "heuristic: a threshold or pattern that can be wrong"
    )
    title: str
    message: str = Field(description="what was found, with the numbers")
    fix: str = Field(description="what to change")
    count: int = Field(
        1, description="how many times the log shows it (a Ray-deduplicated line counts N + 1)"
    )
    ranks: dict[str, int] = Field(
        default_factory=dict, description="count per rank or process, when the log says"
    )
    evidence: list[Evidence] = Field(
        default_factory=list, description=f"up to {MAX_EVIDENCE} lines that prove it"
    )
    lifetime: int | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="the server lifetime it was found in (report `lifetimes`); only present "
        "when the input holds several",
    )


def at_or_above(findings: Iterable[Finding], level: str) -> list[Finding]:
    """The findings whose severity is ``level`` or worse (``never``: none)."""
    if level == "never":
        return []
    floor = SEVERITY_RANK[level]
    return [f for f in findings if SEVERITY_RANK[f.severity] >= floor]


def rank_label(e: Event) -> str:
    """Who printed a line: ``TP3``, ``DP1 TP3``, ``DP0``, the process tag, or ``main``."""
    if e.tp_rank is not None:
        return f"TP{e.tp_rank}" if e.dp_rank is None else f"DP{e.dp_rank} TP{e.tp_rank}"
    if e.dp_rank is not None:
        return f"DP{e.dp_rank}"
    if e.process:
        return e.process
    return "main"


def count_ranks(events: Iterable[Event]) -> tuple[int, dict[str, int]]:
    """(total count, count per rank). A Ray-deduplicated line stands for ``repeated`` lines: one on its
    own rank, the copies on ranks the log does not name."""
    ranks: Counter[str] = Counter()
    total = 0
    for e in events:
        total += e.repeated
        ranks[rank_label(e)] += 1
        if e.repeated > 1:
            ranks[RAY_COPIES] += e.repeated - 1
    return total, dict(sorted(ranks.items(), key=lambda kv: _rank_key(kv[0])))


def count_ranks_of(rows: pl.DataFrame) -> tuple[int, dict[str, int]]:
    """``count_ranks`` of a kind frame's rows (columns ``repeated``, ``tp_rank``, ``dp_rank``,
    ``process``): the same count and labels, with no event object made."""
    if rows.height == 0:
        return 0, {}
    tp, dp, proc = pl.col("tp_rank").cast(pl.Utf8), pl.col("dp_rank").cast(pl.Utf8), pl.col("process")
    label = (
        pl.when(tp.is_not_null() & dp.is_null())
        .then(pl.lit("TP") + tp)
        .when(tp.is_not_null())
        .then(pl.lit("DP") + dp + pl.lit(" TP") + tp)
        .when(dp.is_not_null())
        .then(pl.lit("DP") + dp)
        .when(proc.is_not_null() & (proc != ""))
        .then(proc)
        .otherwise(pl.lit("main"))
    )
    rep = pl.col("repeated")
    per = rows.group_by(label.alias("label")).agg(pl.len().alias("n"))
    ranks: dict[str, int] = dict(zip(per["label"].to_list(), per["n"].to_list(), strict=True))
    copies = int(rows.select((rep - 1).clip(lower_bound=0).sum()).item() or 0)
    if copies:
        ranks[RAY_COPIES] = copies
    total = int(rows["repeated"].sum())
    return total, dict(sorted(ranks.items(), key=lambda kv: _rank_key(kv[0])))


def _rank_key(label: str) -> tuple[int, int, int, str]:
    """Sort TP/DP labels numerically, then the rest by name."""
    m = re.fullmatch(r"(?:DP(\d+))? ?(?:TP(\d+))?", label)
    if m and (m.group(1) or m.group(2)):
        return (0, int(m.group(1) or -1), int(m.group(2) or -1), "")
    return (1, 0, 0, label)


def evidence_of(e: Event, needle: str | None = None) -> Evidence:
    """The log line of ``e`` that holds ``needle`` (the record's first line otherwise).

    A record spans physical lines (a traceback, a multi-line message); when its raw lines map one to
    one onto physical lines, the evidence points at the exact line.
    """
    lines = e.raw.split("\n") if e.raw else [""]
    exact = (e.end_line or e.line) - e.line + 1 == len(lines)
    k = next((i for i, text in enumerate(lines) if needle in text), 0) if needle else 0
    return Evidence(file=e.file, line=e.line + k if exact else e.line, text=lines[k].rstrip()[:MAX_TEXT])


EvidenceItem = Event | tuple[Event, str | None] | Evidence
"""An event (its first line), an event with the text to point at, or a ready evidence line."""


def evidence_list(items: Iterable[EvidenceItem], limit: int = MAX_EVIDENCE) -> list[Evidence]:
    """Evidence from events (optionally with the text to point at), in order, without duplicates."""
    out: list[Evidence] = []
    seen: set[tuple[str, int]] = set()
    for item in items:
        if isinstance(item, Evidence):
            ev = item
        elif isinstance(item, tuple):
            ev = evidence_of(item[0], item[1])
        else:
            ev = evidence_of(item)
        key = (ev.file, ev.line)
        if key in seen:
            continue
        seen.add(key)
        out.append(ev)
        if len(out) >= limit:
            break
    return out


__all__ = [
    "CONFIDENCES",
    "Confidence",
    "Evidence",
    "EvidenceItem",
    "Finding",
    "MAX_EVIDENCE",
    "SEVERITIES",
    "SEVERITY_RANK",
    "Severity",
    "at_or_above",
    "count_ranks",
    "count_ranks_of",
    "evidence_list",
    "evidence_of",
    "rank_label",
]

"""The digest: coded rules over a run's events and analyses, giving findings with evidence and fixes.

    from logscope.digest import run_rules
    findings = run_rules(run, report)     # report: the analyses' Report, or None to compute what is needed

Each rule reports a problem once, with how bad it is (``severity``), how it knows (``confidence``:
observed / inferred / heuristic), the numbers, the fix and the lines that prove it. A rule whose
inputs the log lacks reports nothing, and ``digest()`` says why it could not look: silence is never
an all-clear. Rules live one per module in ``logscope.digest.rules``; others come from the
``logscope.rules`` entry-point group.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from logscope.analyses.base import RunData, RunLike
from logscope.digest.context import Context
from logscope.digest.finding import SEVERITY_RANK, Confidence, Evidence, Finding, Severity, at_or_above
from logscope.digest.registry import REGISTRY, Rule, RuleError, all_rules, get_rule, register


class Digest(BaseModel):
    """The findings of a run, and the rules that could not look at it (with the reason)."""

    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(default_factory=list)
    checked: list[str] = Field(default_factory=list, description="codes of the rules that looked at the run")
    not_checked: dict[str, str] = Field(
        default_factory=dict, description="code -> why the rule could not look"
    )


def _order(f: Finding) -> tuple[int, str, str, int]:
    first = f.evidence[0] if f.evidence else None
    return (-SEVERITY_RANK[f.severity], f.code, first.file if first else "", first.line if first else 0)


def digest(
    run: RunLike | RunData,
    report: Any = None,
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> Digest:
    """Run every registered rule (or the ``select``ed codes, less the ``ignore``d ones) on ``run``."""
    ctx = Context(run, report)
    out = Digest()
    chosen = {get_rule(c).code for c in select} if select else None
    skipped = {get_rule(c).code for c in ignore} if ignore else set()
    for cls in all_rules():
        if (chosen is not None and cls.code not in chosen) or cls.code in skipped:
            continue
        rule = cls()
        reason = rule.not_checked(ctx)
        if reason is not None:
            out.not_checked[cls.code] = reason
            continue
        out.checked.append(cls.code)
        out.findings.extend(rule.check(ctx))
    out.findings.sort(key=_order)
    return out


def text_anchors() -> tuple[str, ...]:
    """Literals of every text line a rule or an analysis reads (warnings, unparsed lines).

    Lines holding none of them and no grammar's anchor cannot change a report, so the sparse reader
    may skip them; lines holding one are kept even when they are not understood.
    """
    from logscope.analyses.base import TEXT_ANCHORS
    from logscope.digest.context import _SHUTDOWN_ANCHORS
    from logscope.digest.rules._failures import ANCHORS as FAILURES

    lits: set[str] = set(TEXT_ANCHORS) | set(_SHUTDOWN_ANCHORS) | set(FAILURES)
    for rule in all_rules():
        lits.update(rule.anchors)
    return tuple(sorted(lits))


def run_rules(run: RunLike | RunData, report: Any = None) -> list[Finding]:
    """The findings of every registered rule on ``run``, worst first."""
    return digest(run, report).findings


__all__ = [
    "Confidence",
    "Context",
    "Digest",
    "Evidence",
    "Finding",
    "REGISTRY",
    "Rule",
    "RuleError",
    "Severity",
    "all_rules",
    "at_or_above",
    "digest",
    "get_rule",
    "register",
    "run_rules",
    "text_anchors",
]

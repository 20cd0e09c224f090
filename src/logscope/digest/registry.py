"""The rule registry: coded rules (``KV01``), checked when they register, found through entry points.

Like sqlfluff's and ruff's rules: each rule is a class with a stable code (two capital letters and two
digits), a kebab-case slug, a severity, a confidence, the analyses and event kinds it reads, and a
docstring that is its documentation, with the sections What, Why, Fix and References. Codes are
never reused: a malformed code, a code or slug already taken, or a retired code is refused at
registration. Other packages add rules through the entry-point group ``logscope.rules`` (an entry
naming a module that registers its rules on import, a ``Rule`` class, or a list of them).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterable, Iterator
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from logscope.digest.context import ANALYSES, Context
from logscope.digest.finding import (
    CONFIDENCES,
    SEVERITIES,
    Confidence,
    EvidenceItem,
    Finding,
    Severity,
    count_ranks,
    count_ranks_of,
    evidence_list,
)
from logscope.errors import LogscopeError
from logscope.events import KINDS, Event

if TYPE_CHECKING:
    import polars as pl

ENTRY_POINT_GROUP = "logscope.rules"
BUILTIN_MODULE = "logscope.digest.rules"
CODE = re.compile(r"^[A-Z]{2}\d{2}$")
SLUG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
SECTIONS = ("What", "Why", "Fix", "References")

# Codes of rules that were removed: never given to another rule.
RETIRED: dict[str, str] = {}


class RuleError(LogscopeError):
    """A rule cannot be registered (bad or duplicate code, missing documentation) or loaded."""


class Rule:
    """Base of every digest rule. Subclasses set the class attributes and implement ``check``."""

    code: ClassVar[str] = ""
    slug: ClassVar[str] = ""
    title: ClassVar[str] = ""
    severity: ClassVar[Severity] = "warning"
    confidence: ClassVar[Confidence] = "observed"
    requires: ClassVar[tuple[str, ...]] = ()
    """Analyses the rule needs; when one does not apply to the run, the rule reports nothing."""
    kinds: ClassVar[tuple[str, ...]] = ()
    """Event kinds the rule reads; when the run has none of them, the rule reports nothing."""
    anchors: ClassVar[tuple[str, ...]] = ()
    """Literals of the text lines the rule greps (warnings, unparsed lines): the sparse reader keeps
    the lines that hold one, so that the rule sees them on big logs too."""
    engines: ClassVar[tuple[str, ...]] = ("vllm", "sglang")
    """Engines whose logs can show the problem (a log of unknown engine is checked by every rule)."""

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    # -- helpers for subclasses -------------------------------------------------------------------
    def not_checked(self, ctx: Context) -> str | None:
        """Why the rule cannot look at this run, or None when it can."""
        seen = set(ctx.engines) or ({ctx.engine} if ctx.engine else set())
        if seen and not seen & set(self.engines):
            return f"{' and '.join(sorted(seen))} logs cannot show this ({', '.join(self.engines)} only)"
        if self.kinds and not any(ctx.has(k) for k in self.kinds):
            return f"no {' / '.join(self.kinds)} lines in the log"
        for name in self.requires:
            if ctx.analysis(name) is None:
                return f"the {name} analysis does not apply to this log"
        return None

    def finding(
        self,
        message: str,
        fix: str,
        events: Iterable[Event] = (),
        evidence: Iterable[EvidenceItem] | None = None,
        *,
        rows: pl.DataFrame | None = None,
    ) -> Finding:
        """A finding of this rule: ``events`` are counted (per rank); ``evidence`` (default: ``events``)
        gives the lines shown. ``rows`` (a kind frame's rows) are counted instead of ``events`` when
        given: a rule that works on frames makes no event object for what it only counts."""
        evs = list(events)
        count, ranks = count_ranks(evs) if rows is None else count_ranks_of(rows)
        return Finding(
            code=self.code,
            slug=self.slug,
            severity=self.severity,
            confidence=self.confidence,
            title=self.title,
            message=message,
            fix=fix,
            count=max(count, 1),
            ranks=ranks,
            evidence=evidence_list(evs if evidence is None else evidence),
        )

    @classmethod
    def doc(cls) -> dict[str, str]:
        """The docstring's summary line and its What / Why / Fix / References sections."""
        return parse_doc(cls.__doc__ or "")


def parse_doc(doc: str) -> dict[str, str]:
    """``{"summary": ..., "What": ..., ...}`` from a rule docstring: a summary line, then sections whose
    heading is the word alone on its line and whose text is indented under it."""
    text = inspect.cleandoc(doc)
    lines = text.split("\n")
    out: dict[str, str] = {"summary": lines[0].strip() if lines else ""}
    current: str | None = None
    body: list[str] = []

    def close() -> None:
        if current is not None:
            out[current] = inspect.cleandoc("\n".join(body)).strip()

    for ln in lines[1:]:
        if ln.strip() in SECTIONS and not ln.startswith((" ", "\t")):
            close()
            current, body = ln.strip(), []
        elif current is not None:
            body.append(ln)
    close()
    return out


class Registry:
    """Rules by code, in code order."""

    def __init__(self) -> None:
        self._rules: dict[str, type[Rule]] = {}
        self._loaded = False

    def register(self, cls: type[Rule]) -> type[Rule]:
        """Add a rule class, or raise ``RuleError`` saying what is wrong with it."""
        where = f"{cls.__module__}.{cls.__qualname__}"
        if not (inspect.isclass(cls) and issubclass(cls, Rule)):
            raise RuleError(f"{where} is not a logscope Rule")
        code = cls.code
        if not CODE.match(code or ""):
            raise RuleError(
                f"rule {where} has a malformed code {code!r}: two capital letters and two digits, e.g. KV01"
            )
        if code in RETIRED:
            raise RuleError(
                f"rule {where} takes code {code}, retired ({RETIRED[code]}): codes are never reused"
            )
        old = self._rules.get(code)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise RuleError(
                f"rule {where} takes code {code}, already used by {old.__module__}.{old.__qualname__}"
            )
        if not SLUG.match(cls.slug or ""):
            raise RuleError(
                f"rule {code} ({where}) has a malformed slug {cls.slug!r}: kebab-case words, e.g. kv-pool-short"
            )
        for other in self._rules.values():
            if other.slug == cls.slug and other.code != code:
                raise RuleError(f"rule {code} takes slug {cls.slug!r}, already used by {other.code}")
        if not cls.title.strip():
            raise RuleError(f"rule {code} ({where}) has no title")
        if cls.severity not in SEVERITIES:
            raise RuleError(f"rule {code} has severity {cls.severity!r}; use one of {', '.join(SEVERITIES)}")
        if cls.confidence not in CONFIDENCES:
            raise RuleError(
                f"rule {code} has confidence {cls.confidence!r}; use one of {', '.join(CONFIDENCES)}"
            )
        unknown = [a for a in cls.requires if a not in ANALYSES]
        if unknown:
            raise RuleError(f"rule {code} requires unknown analyses {unknown}; known: {', '.join(ANALYSES)}")
        unknown = [k for k in cls.kinds if k not in KINDS]
        if unknown:
            raise RuleError(f"rule {code} reads unknown event kinds {unknown}")
        if cls.check is Rule.check:
            raise RuleError(f"rule {code} ({where}) does not implement check()")
        doc = cls.doc()
        missing = [s for s in SECTIONS if not doc.get(s)]
        if not doc.get("summary") or missing:
            raise RuleError(
                f"rule {code} ({where}) lacks documentation: its docstring needs a summary line and the "
                f"sections {', '.join(missing or SECTIONS)}"
            )
        self._rules[code] = cls
        return cls

    def unregister(self, code: str) -> None:
        """Remove a rule (tests only: a removed code goes to ``RETIRED``, never to another rule)."""
        self._rules.pop(code, None)

    def load(self) -> None:
        """Register the built-in rules and those of installed plugins (once)."""
        if self._loaded:
            return
        importlib.import_module(BUILTIN_MODULE)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.value.split(":")[0] == BUILTIN_MODULE:
                continue
            try:
                obj: Any = ep.load()
            except Exception as exc:  # a broken plugin: say which, in one sentence
                raise RuleError(f"rule plugin {ep.name!r} ({ep.value}) could not be loaded: {exc}") from exc
            for cls in _rule_classes(obj):
                self.register(cls)
        self._loaded = True

    def rules(self) -> list[type[Rule]]:
        self.load()
        return [self._rules[c] for c in sorted(self._rules)]

    def get(self, code_or_slug: str) -> type[Rule]:
        """A rule by code (any case) or slug; ``KeyError`` when there is none."""
        self.load()
        key = code_or_slug.strip()
        if key.upper() in self._rules:
            return self._rules[key.upper()]
        for cls in self._rules.values():
            if cls.slug == key.lower():
                return cls
        raise KeyError(code_or_slug)

    def __iter__(self) -> Iterator[type[Rule]]:
        return iter(self.rules())

    def __len__(self) -> int:
        return len(self.rules())


def _rule_classes(obj: Any) -> list[type[Rule]]:
    if inspect.ismodule(obj):
        return []  # a module registers its rules when imported
    if isinstance(obj, type):
        return [obj]
    if isinstance(obj, list | tuple):
        return [c for c in obj if isinstance(c, type)]
    raise RuleError(f"rule plugin object {obj!r} is neither a module, a Rule class nor a list of them")


REGISTRY = Registry()

R = TypeVar("R", bound=type[Rule])


def register(cls: R) -> R:
    """Class decorator: add a rule to the registry (raises ``RuleError`` when it is malformed)."""
    REGISTRY.register(cls)
    return cls


def all_rules() -> list[type[Rule]]:
    """Every registered rule, in code order."""
    return REGISTRY.rules()


def get_rule(code_or_slug: str) -> type[Rule]:
    return REGISTRY.get(code_or_slug)


__all__ = [
    "BUILTIN_MODULE",
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "RETIRED",
    "Rule",
    "RuleError",
    "get_rule",
    "all_rules",
    "parse_doc",
    "register",
]

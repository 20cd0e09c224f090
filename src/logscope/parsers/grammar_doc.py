"""``docs/grammar.md``: every message grammar, written out as BNF from its pyparsing element.

The grammars are defined once (``logscope.parsers.grammar``'s vocabulary, which builds a pyparsing
element and the compiled regex from one definition); this page is generated from the pyparsing form,
so it cannot drift from what runs (``tests/parsers/test_grammar_doc.py`` compares the checked-in page
with a fresh one). Regenerate with::

    python -m logscope.parsers.grammar_doc > docs/grammar.md

Notation (PEG, as pyparsing matches):

- ``"text"``: literal text, spaces included (whitespace is never skipped);
- ``<int>``, ``<float>``, ``<word>``, ``<rest>`` ...: a named terminal; ``/regex/``: any other terminal;
- ``field=<x>``: the matched text becomes the event field ``field`` (converted as its terminal says);
- ``a b``: ``a`` then ``b``; ``( a / b )``: ordered choice, the first that matches wins;
- ``[ a ]``: optional, kept when it matches; ``{ a }``: zero or more repetitions;
- ``$``: the end of the record (trailing whitespace allowed).
"""

from __future__ import annotations

import json
import sys

import pyparsing as pp

from logscope.parsers import dialect
from logscope.parsers.grammar import Grammar

ENGINES: tuple[tuple[str | None, str], ...] = (
    ("vllm", "vLLM"),
    ("sglang", "SGLang"),
    (None, "Any log (no engine)"),
)
_END = r"\s*+\Z"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _terminal(el: pp.ParserElement) -> str:
    if isinstance(el, pp.Literal):
        return _quote(el.match)
    if isinstance(el, pp.Regex):
        if el.customName:  # a label: a word (``int``), or BNF text of its own (a keyed item's keys)
            return el.customName if el.customName.startswith("( ") else f"<{el.customName}>"
        if el.pattern == _END:
            return "$"
        return f"/{el.pattern}/"
    return f"<{el.name}>"


def bnf(el: pp.ParserElement, rules: dict[str, pp.ParserElement], top: bool = False) -> str:
    """One element as BNF text. A non-terminal with a name of its own (a field list's ``item``) is
    written as that name, its definition collected in ``rules``; ``top``: one item or choice a line."""
    name = el.resultsName
    if isinstance(el, pp.Suppress):
        return bnf(el.expr, rules, top)
    if not top and el.customName and isinstance(el, pp.ParseExpression):
        rules.setdefault(el.customName, el)
        text = el.customName
    elif isinstance(el, pp.And):
        text = ("\n    " if top else " ").join(bnf(e, rules) for e in el.exprs)
    elif isinstance(el, pp.MatchFirst):
        alts = [bnf(e, rules) for e in el.exprs]
        text = "  " + "\n  / ".join(alts) if top else "( " + " / ".join(alts) + " )"
    elif isinstance(el, pp.Opt):
        text = "[ " + bnf(el.expr, rules) + " ]"
    elif isinstance(el, pp.ZeroOrMore):
        text = "{ " + bnf(el.expr, rules) + " }"
    else:
        text = _terminal(el)
    return f"{name}={text}" if name else text


def _section(g: Grammar) -> list[str]:
    where = "anywhere in the message" if g.search else "at the start of the message"
    anchors = ", ".join(f"`{a}`" for a in g.anchors) or "none"
    extra = "; may add its event beside another grammar's" if g.also else ""
    rules: dict[str, pp.ParserElement] = {}
    lines = [f"{g.name} ::=\n    {bnf(g.element, rules, top=True)}"]
    done: set[str] = set()
    while len(done) < len(rules):
        rule = next(r for r in rules if r not in done)
        done.add(rule)
        lines.append(f"{rule} ::=\n  {bnf(rules[rule], rules, top=True)}")
    return [
        f"### `{g.name}` → `{g.kind}`",
        "",
        f"Matched {where}; the message holds one of the anchors {anchors}{extra}.",
        "",
        "```",
        *lines,
        "```",
        "",
    ]


def page() -> str:
    """The whole of ``docs/grammar.md``."""
    out = [
        "# Grammars",
        "",
        "Generated from the pyparsing form of every message grammar by "
        "`python -m logscope.parsers.grammar_doc > docs/grammar.md`; do not edit by hand (a test "
        "compares). The same definitions compile to the regexes that run (see `docs/design.md`).",
        "",
    ]
    doc = __doc__ or ""
    out += [doc[doc.index("Notation") :].strip().replace("``", "`"), ""]
    seen: set[str] = set()
    for engine, title in ENGINES:
        grammars = [g for g in dialect(engine).grammars if g.name not in seen]
        seen.update(g.name for g in grammars)
        out += [f"## {title}", ""]
        for g in grammars:
            out += _section(g)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover - the command that writes the page
    sys.stdout.write(page())

"""Our grammar vocabulary: each grammar is one pyparsing element *and* one compiled regex.

Why: an idiomatic pyparsing grammar parses ~4k lines/s, a compiled ``re`` pattern ~500k. We write
every message grammar once, from a handful of building blocks (literals, typed leaves, sequences,
ordered choices, optionals), and derive both executions from that one definition:

* ``Node.pp()`` builds the pyparsing element: the definition, the documentation (railroad
  diagrams) and the reference semantics;
* ``Node.rx()`` builds an equivalent regex fragment with numbered named groups and typed
  converters: the hot path.

Equivalence is by construction, not by hope. pyparsing is a PEG parser: a leaf that matched is never
re-tried shorter, the first alternative that matches wins, an optional that matched is kept. The
compiled form reproduces that with atomic groups ``(?>...)`` around every leaf and choice and
possessive optionals ``(?:...)?+`` (Python >= 3.11), so the regex engine cannot backtrack where
pyparsing would not. Whitespace is never skipped implicitly (``leave_whitespace`` everywhere):
spaces are literal text in both forms. A test runs both forms on every corpus line and on generated
text and demands identical fields.

Repetitions (a per-position list ``0.600, 0.385, ...``, SGLang's ``key: value`` lists) are leaves
whose converter splits the matched span: a regex group keeps only its last repetition, so the split
happens in a second, small step, the same in both forms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyparsing as pp

Converter = Callable[[str], Any]


def to_int(text: str) -> int:
    """An integer as printed, with optional thousands separators (``2,687,776``)."""
    return int(text.replace(",", ""))


def to_float(text: str) -> float:
    """A float as printed (``nan``/``inf`` allowed, thousands separators removed)."""
    return float(text.replace(",", ""))


def to_bool(text: str) -> bool:
    return text.strip().lower() in ("true", "1", "yes")


def to_str(text: str) -> str:
    return text


_DIGITS = r"(?>\d{1,3}(?:,\d{3})++(?!\d)|\d++)"  # 2,687,776 or 2687776; never eats a list's comma
INT = rf"[-+]?{_DIGITS}"
FLOAT = rf"(?:[-+]?(?:{_DIGITS}(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?|[-+]?(?:nan|inf|NaN|Inf))"


class _Ctx:
    """Allocates unique regex group names and remembers how to convert each."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, str, Converter]] = []
        self.each: set[str] = set()  # fields that keep every match's value (``Leaf(each=True)``)

    def group(self, name: str, conv: Converter, each: bool = False) -> str:
        gname = f"g{len(self.groups)}"
        self.groups.append((gname, name, conv))
        if each:
            self.each.add(name)
        return gname


def _put(out: dict[str, Any], name: str, value: Any, each: set[str]) -> None:
    """Store one field's value: the last one wins, except ``each`` fields, which list them all."""
    if name in each:
        out.setdefault(name, []).append(value)
    else:
        out[name] = value


class Node:
    """A building block of a grammar."""

    def pp(self) -> pp.ParserElement:
        raise NotImplementedError

    def rx(self, ctx: _Ctx) -> str:
        raise NotImplementedError

    def __add__(self, other: Node | str) -> Seq:
        return Seq(self, other)

    def __radd__(self, other: str) -> Seq:
        return Seq(other, self)

    def __or__(self, other: Node | str) -> Alt:
        return Alt(self, other)


def _node(x: Node | str) -> Node:
    return Lit(x) if isinstance(x, str) else x


@dataclass(frozen=True)
class Lit(Node):
    """Literal text; no field."""

    text: str

    def pp(self) -> pp.ParserElement:
        return pp.Literal(self.text).leave_whitespace()

    def rx(self, ctx: _Ctx) -> str:
        return re.escape(self.text)


@dataclass(frozen=True)
class Leaf(Node):
    """A field (or, without a name, skipped text) matched by one regex and converted once.

    ``pattern`` must not contain capturing groups (use ``(?:...)``). ``each``: the field is the list
    of every match's value in order, not the last one (pyparsing's ``list_all_matches``); inside a
    ``Many`` this collects items no other alternative claimed, e.g. unknown ``key: value`` fields.
    """

    pattern: str
    name: str | None = None
    conv: Converter = to_str
    flags: int = 0
    each: bool = False

    def pp(self) -> pp.ParserElement:
        el = pp.Regex(self.pattern, flags=self.flags).leave_whitespace()
        if self.name is None:
            return el.suppress()
        conv = self.conv
        el = el.copy().add_parse_action(lambda t: [conv(t[0])])
        return el.set_results_name(self.name, list_all_matches=self.each)

    def rx(self, ctx: _Ctx) -> str:
        inner = self.pattern if not self.flags else f"(?{_flag_letters(self.flags)}:{self.pattern})"
        if self.name is None:
            return f"(?>{inner})"
        return f"(?P<{ctx.group(self.name, self.conv, self.each)}>(?>{inner}))"


@dataclass(frozen=True)
class Keyed(Leaf):
    """A ``key<join>value`` item whose key is one of a table's: the field is ``(table[key], value)``.

    Built with ``keyed()``. The pattern is the plain alternation of the keys (longest first) followed
    by ``join`` and the value pattern, so it matches and converts exactly as the equivalent ``Leaf``
    would; what the structure adds is that a ``Many`` can specialise a learned shape down to the key
    (``key: (value)`` with the field name known in advance), which spares the key's lookup per line.
    """

    table: tuple[tuple[str, str], ...] = ()  # (printed key, field name)
    join: str = ": "
    value: str = ""
    vconv: Converter = to_str


def keyed(table: dict[str, str], value: str, vconv: Converter, name: str, *, join: str = ": ",
          each: bool = False) -> Keyed:
    """A ``Keyed`` leaf: any of ``table``'s keys, ``join``, a value matched by ``value`` (no groups).

    No key may hold ``join``'s first character, and keys are tried longest first. Then where the
    leaf matches ``key<join>value``, no other key can: a longer key would have to hold that
    character, and a shorter one is tried after ``key``. So ``key<join>(value)`` takes exactly the
    same text as the leaf where the leaf took ``key`` (what ``Many``'s shapes rely on), and the key
    is what precedes the first ``join``.
    """
    for key in table:
        if join[0] in key:
            raise ValueError(f"key {key!r} holds the join's first character {join[0]!r}")
    names = dict(table)

    def conv(text: str) -> tuple[str, Any]:
        key, _, val = text.partition(join)
        return names[key], vconv(val)

    keys = "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True))
    return Keyed(f"(?:{keys}){re.escape(join)}(?:{value})", name, conv, each=each,
                 table=tuple(table.items()), join=join, value=value, vconv=vconv)


def _flag_letters(flags: int) -> str:
    letters = ""
    if flags & re.IGNORECASE:
        letters += "i"
    if flags & re.DOTALL:
        letters += "s"
    return letters


def Int(name: str | None = None) -> Leaf:  # noqa: N802 - vocabulary reads like a type
    """An integer, thousands separators allowed."""
    return Leaf(INT, name, to_int)


def Float(name: str | None = None) -> Leaf:  # noqa: N802
    """A float (also integers, ``nan``, ``inf``, thousands separators)."""
    return Leaf(FLOAT, name, to_float)


def Word(name: str | None = None) -> Leaf:  # noqa: N802
    """A run of non-space characters."""
    return Leaf(r"\S++", name, to_str)


def Rest(name: str | None = None) -> Leaf:  # noqa: N802
    """Everything to the end of the record (newlines included)."""
    return Leaf(r"[\s\S]*+", name, to_str)


def Until(stop: str, name: str | None = None, conv: Converter = to_str) -> Leaf:  # noqa: N802
    """Text up to (not including) the first occurrence of ``stop`` (pyparsing's ``SkipTo``)."""
    return Leaf(rf"[\s\S]*?(?={re.escape(stop)})", name, conv)


def NumList(name: str, sep: str = ", ") -> Leaf:  # noqa: N802
    """A separated list of floats, e.g. per-position acceptance ``0.600, 0.385, 0.215``."""
    pattern = f"{FLOAT}(?:{re.escape(sep)}{FLOAT})*+"
    return Leaf(pattern, name, lambda s: [to_float(x) for x in s.split(sep)])


@dataclass(frozen=True, init=False)
class Seq(Node):
    """Elements one after the other."""

    items: tuple[Node, ...]

    def __init__(self, *items: Node | str) -> None:
        flat: list[Node] = []
        for it in items:
            n = _node(it)
            flat.extend(n.items if isinstance(n, Seq) else (n,))
        object.__setattr__(self, "items", tuple(flat))

    def pp(self) -> pp.ParserElement:
        return pp.And([i.pp() for i in self.items]).leave_whitespace()

    def rx(self, ctx: _Ctx) -> str:
        return "".join(i.rx(ctx) for i in self.items)


@dataclass(frozen=True, init=False)
class Alt(Node):
    """Ordered choice: the first alternative that matches wins (PEG ``/``)."""

    items: tuple[Node, ...]

    def __init__(self, *items: Node | str) -> None:
        flat: list[Node] = []
        for it in items:
            n = _node(it)
            flat.extend(n.items if isinstance(n, Alt) else (n,))
        object.__setattr__(self, "items", tuple(flat))

    def pp(self) -> pp.ParserElement:
        return pp.MatchFirst([i.pp() for i in self.items]).leave_whitespace()

    def rx(self, ctx: _Ctx) -> str:
        return "(?>" + "|".join(f"(?:{i.rx(ctx)})" for i in self.items) + ")"


@dataclass(frozen=True, init=False)
class Opt(Node):
    """Optional element (kept when it matches)."""

    item: Node

    def __init__(self, *items: Node | str) -> None:
        object.__setattr__(self, "item", Seq(*items) if len(items) > 1 else _node(items[0]))

    def pp(self) -> pp.ParserElement:
        return pp.Opt(self.item.pp()).leave_whitespace()

    def rx(self, ctx: _Ctx) -> str:
        return f"(?:{self.item.rx(ctx)})?+"


@dataclass(frozen=True, init=False)
class Many(Node):
    """One or more items joined by ``sep``, in any order (e.g. ``key: value`` fields).

    pyparsing: ``item + ZeroOrMore(sep + item)``. Compiled: the whole span is matched by one
    group-free pattern, then split by running the item's own compiled regex along it (a regex group
    inside a repetition keeps only its last capture, so fields cannot be read in one match).
    A field seen twice keeps its last value, as pyparsing does.
    """

    item: Node
    sep: str

    def __init__(self, item: Node | str, sep: str = ", ") -> None:
        object.__setattr__(self, "item", _node(item))
        object.__setattr__(self, "sep", sep)

    def pp(self) -> pp.ParserElement:
        sep = pp.Literal(self.sep).leave_whitespace().suppress()
        return (self.item.pp() + pp.ZeroOrMore(sep + self.item.pp()).leave_whitespace()).leave_whitespace()

    def rx(self, ctx: _Ctx) -> str:
        sub = _Ctx()
        # an item that is a choice (the usual case: one alternative per field) is compiled branch by
        # branch, as Alt.rx does, remembering which groups each branch owns: after a match, the last
        # group that took part names the branch, and only its few groups need reading
        spans: list[tuple[int, int]] = []
        parts: list[str] = []
        alts = self.item.items if isinstance(self.item, Alt) else (self.item,)
        for alt in alts:
            first = len(sub.groups)
            parts.append(alt.rx(sub))
            spans.append((first, len(sub.groups)))
        src = "(?>" + "|".join(f"(?:{p})" for p in parts) + ")" if len(parts) > 1 else parts[0]
        # per group: (branch that owns it, that branch's first group, one past its last)
        owner = [next((b, *sp) for b, sp in enumerate(spans) if sp[0] <= i < sp[1]) for i in range(len(sub.groups))]
        item_rx = re.compile(src)
        plain = re.sub(r"\(\?P<g\d+>", "(?:", src)
        sep = self.sep
        groups = sub.groups
        each = sub.each
        # a branch that is a named Keyed leaf: its shapes are learned down to the key it took
        keyed = [a if isinstance(a, Keyed) and a.name is not None else None for a in alts]
        shapes = _Shapes(parts, groups, each, sep, keyed) if len(parts) > 1 else None

        def split(span: str) -> dict[str, Any]:
            if shapes is not None:
                known = shapes.read(span)
                if known is not None:
                    return known
            out: dict[str, Any] = {}
            taken: list[tuple[int, str | None]] = []  # the branch (and key) each item took: the span's shape
            pos = 0
            while True:
                m = item_rx.match(span, pos)
                if m is None:
                    break
                last = m.lastindex  # every capturing group is one of ours, numbered in creation order
                if last is not None:
                    branch, first, end = owner[last - 1]
                    kb = keyed[branch]
                    taken.append((branch, None if kb is None else m.group(first + 1).partition(kb.join)[0]))
                    for i in range(first, end):
                        val = m.group(i + 1)
                        if val is not None:
                            _g, name, conv = groups[i]
                            _put(out, name, conv(val), each)
                else:
                    taken.append((-1, None))
                pos = m.end()
                if not span.startswith(sep, pos):
                    break
                pos += len(sep)
            if shapes is not None and pos == len(span):
                shapes.learn(taken)
            return out

        gname = ctx.group(MERGE, split)
        ctx.each |= sub.each
        return f"(?P<{gname}>(?:{plain})(?:{re.escape(sep)}(?:{plain}))*+)"


class _Shapes:
    """The shapes (which branch, and which key, each item took) a ``Many`` has met, each compiled into
    one regex and one reader.

    A log repeats a few field orders millions of times (one per engine version and line kind), yet
    the general split matches item by item in Python. After a span was split, its shape becomes one
    regex: item *i* is ``(?!earlier branches)(?>branch taken)``, exactly the PEG choice the item made
    (the branches before it fail, this one matches, atomically, to the same extent), items joined by
    the separator, the whole span required. A span that matches a known shape therefore splits into the
    same fields in the same order as the general loop would; any other span takes the general loop.
    An item whose branch is a ``Keyed`` leaf is narrowed to the key it took (``key: (value)``, the
    same choice: see ``keyed``); its field name is then known in advance.
    Each shape's reader is written out as one function (see ``_reader``).
    At most ``LIMIT`` shapes are kept (the first ones met); the one that matched last is tried first,
    and a span that none of the ``TRIES`` most recent ones fits takes the general loop.
    """

    LIMIT = 16
    TRIES = 4

    def __init__(self, parts: list[str], groups: list[tuple[str, str, Converter]], each: set[str], sep: str,
                 keyed: list[Keyed | None]) -> None:
        self.parts = parts
        self.groups = groups
        self.each = each
        self.sep = sep
        self.keyed = keyed
        self.known: list[tuple[re.Pattern[str], Callable[[tuple[str | None, ...]], dict[str, Any]]]] = []
        self.seen: set[tuple[tuple[int, str | None], ...]] = set()

    def read(self, span: str) -> dict[str, Any] | None:
        for k, (rx, reader) in enumerate(self.known[: self.TRIES]):
            m = rx.fullmatch(span)
            if m is None:
                continue
            if k:  # most recent first: a log's lines come in runs of the same shape
                self.known.insert(0, self.known.pop(k))
            return reader(m.groups())
        return None

    def learn(self, taken: list[tuple[int, str | None]]) -> None:
        shape = tuple(taken)
        if shape in self.seen or len(self.known) >= self.LIMIT or any(b < 0 for b, _k in shape):
            return
        self.seen.add(shape)
        items: list[str] = []
        flat: list[tuple[str, Converter, str | None]] = []  # per group of the shape's regex: name, conv, key's field
        for b, key in shape:
            earlier = "|".join(f"(?:{_GROUP.sub('(?:', p)})" for p in self.parts[:b])
            guard = f"(?!{earlier})" if earlier else ""
            kb = self.keyed[b]
            if kb is not None and key is not None:
                fname = dict(kb.table)[key]
                assert kb.name is not None
                flat.append((kb.name, kb.vconv, fname))
                items.append(f"{guard}(?>{re.escape(key + kb.join)}({kb.value}))")
                continue
            for n in _GROUP.findall(self.parts[b]):
                _g, name, conv = self.groups[int(n)]
                flat.append((name, conv, None))
            items.append(f"{guard}(?>{_GROUP.sub('(', self.parts[b])})")
        self.known.insert(0, (re.compile(re.escape(self.sep).join(items)), _reader(flat, self.each)))


def _reader(flat: list[tuple[str, Converter, str | None]], each: set[str]) -> Callable[[tuple[str | None, ...]], dict[str, Any]]:
    """The function that turns one shape's groups into the fields the general split would give.

    When every group took part (the usual line), the dict is written out as one expression: keys in
    the order names first appear (as ``_put`` fills the dict), ``each`` names as lists in order, other
    names converted for every group and the last value kept. A keyed item's value is
    ``(field name, converted value)``. Otherwise the groups are put one by one, like the general loop.
    """
    env: dict[str, Any] = {"_put": _put, "each": each}
    values: list[str] = []
    for i, (_name, conv, fname) in enumerate(flat):
        env[f"c{i}"] = conv
        call = f"{conv.__name__}(g[{i}])" if conv in (int, float) else f"c{i}(g[{i}])"
        if fname is not None:
            env[f"n{i}"] = fname
            call = f"(n{i}, {call})"
        values.append(call)
    plan: dict[str, list[int]] = {}
    for i, (name, _conv, _f) in enumerate(flat):
        plan.setdefault(name, []).append(i)
    entries = []
    for name, picks in plan.items():
        if name in each:
            entries.append(f"{name!r}: [{', '.join(values[i] for i in picks)}]")
        elif len(picks) == 1:
            entries.append(f"{name!r}: {values[picks[0]]}")
        else:
            entries.append(f"{name!r}: ({', '.join(values[i] for i in picks)})[-1]")
    body = [
        "def read(g):",
        "    if None not in g:",
        f"        return {{{', '.join(entries)}}}",
        "    out = {}",  # an optional group left out: keys enter the dict as _put puts them
    ]
    for i, (name, _conv, _f) in enumerate(flat):
        body += [f"    if g[{i}] is not None:", f"        _put(out, {name!r}, {values[i]}, each)"]
    body.append("    return out")
    exec("\n".join(body), env)  # noqa: S102 - our own code, built from the shape's group list
    fn: Callable[[tuple[str | None, ...]], dict[str, Any]] = env["read"]
    return fn


_GROUP = re.compile(r"\(\?P<g(\d+)>")


MERGE = "__merge__"


@dataclass(frozen=True)
class End(Node):
    """End of the record, after optional trailing whitespace: refuses lines cut mid-field."""

    def pp(self) -> pp.ParserElement:
        return pp.Regex(r"\s*+\Z").leave_whitespace().suppress()

    def rx(self, ctx: _Ctx) -> str:
        return r"(?>\s*+\Z)"


@dataclass(frozen=True)
class Flag(Node):
    """Literal text whose presence sets a boolean field (absent: the field is not set)."""

    text: str
    name: str

    def pp(self) -> pp.ParserElement:
        return pp.Literal(self.text).leave_whitespace().add_parse_action(lambda: [True])(self.name)

    def rx(self, ctx: _Ctx) -> str:
        return f"(?P<{ctx.group(self.name, lambda _s: True)}>{re.escape(self.text)})"


@dataclass
class Grammar:
    """A named grammar for one kind of message.

    ``anchors``: literals at least one of which every matching message contains (the cheap
    prefilter). ``search``: the grammar may start anywhere in the message (else at its start).
    ``build``: turns the fields into the event's fields (defaults to the fields themselves).
    """

    name: str
    kind: str
    anchors: tuple[str, ...]
    expr: Node
    search: bool = False
    build: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    also: bool = False  # may give an event in addition to another grammar's on the same record
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], list[tuple[str, str, Converter]], set[str]]:
        ctx = _Ctx()
        src = self.expr.rx(ctx)
        return re.compile(src), ctx.groups, ctx.each

    @cached_property
    def _extract(self) -> Callable[[re.Match[str]], dict[str, Any]]:
        return _extractor(self._compiled[1], self._compiled[2])

    @cached_property
    def element(self) -> pp.ParserElement:
        """The pyparsing form (built lazily and cached)."""
        return self.expr.pp().set_name(self.name)

    def match(self, text: str) -> dict[str, Any] | None:
        """Fast path: the compiled regex. Returns the fields, or None when it does not match."""
        rx = self._compiled[0]
        m = rx.search(text) if self.search else rx.match(text)
        if m is None:
            return None
        return self._extract(m)

    def match_pp(self, text: str) -> dict[str, Any] | None:
        """Reference path: the pyparsing element. Same contract as ``match``."""
        el = self.element
        try:
            if self.search:
                for toks, _s, _e in el.scan_string(text, max_matches=1):
                    return _pp_fields(toks)
                return None
            return _pp_fields(el.parse_string(text, parse_all=False))
        except pp.ParseException:
            return None

    def fields(self, text: str, *, reference: bool = False) -> dict[str, Any] | None:
        """Match and build: the event fields for ``text`` or None."""
        got = self.match_pp(text) if reference else self.match(text)
        if got is None:
            return None
        return self.build(got) if self.build else got


def _extractor(groups: list[tuple[str, str, Converter]], each: set[str]) -> Callable[[re.Match[str]], dict[str, Any]]:
    """The function that turns a match of a grammar's regex into its fields.

    What it does is the plain loop over the groups in order: a group that took part is converted and
    stored (the last value wins; ``each`` fields collect a list; a field list's group merges its
    dict). The loop is written out per grammar, one ``if`` per group, because it runs once per
    matching line and the generic loop's bookkeeping cost more than the matching: numbers without
    thousands separators go straight to ``int``/``float`` (which refuse a separator, and only then is
    it removed). ``match_loop`` keeps the generic loop, and a test demands both give the same fields
    on every fixture line.
    """
    env: dict[str, Any] = {"to_int": to_int, "to_float": to_float, "_merge": _merge, "each": each}
    body = ["def extract(m):", "    g = m.groups()", "    out = {}"]
    for i, (_g, name, conv) in enumerate(groups):
        env[f"c{i}"] = conv
        body += [f"    v = g[{i}]", "    if v is not None:"]
        if conv is to_int or conv is to_float:
            # a number without thousands separators is read directly; int/float refuse one with them
            plain = "int" if conv is to_int else "float"
            body += ["        try:", f"            x = {plain}(v)", "        except ValueError:",
                     f"            x = {conv.__name__}(v)"]
            value = "x"
        else:
            value = f"c{i}(v)"
        if name == MERGE:  # merged into nothing yet: the field list's own (new) dict is the result
            body += ["        if out:", f"            _merge(out, {value}, each)", "        else:",
                     f"            out = {value}"]
        elif name in each:
            body.append(f"        out.setdefault({name!r}, []).append({value})")
        else:
            body.append(f"        out[{name!r}] = {value}")
    body.append("    return out")
    exec("\n".join(body), env)  # noqa: S102 - our own code, built from the grammar's group list
    fn: Callable[[re.Match[str]], dict[str, Any]] = env["extract"]
    return fn


def _merge(out: dict[str, Any], fields: dict[str, Any], each: set[str]) -> None:
    """A field list's fields into the record's: ``each`` fields extend, the others replace."""
    for k, v in fields.items():
        if k in each:
            out.setdefault(k, []).extend(v)
        else:
            out[k] = v


def match_loop(g: Grammar, text: str) -> dict[str, Any] | None:
    """``Grammar.match`` by the generic loop over the groups (the reference for ``_extractor``)."""
    rx, groups, each = g._compiled
    m = rx.search(text) if g.search else rx.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {}
    for i, val in enumerate(m.groups()):
        if val is None:
            continue
        _g, name, conv = groups[i]
        if name == MERGE:
            _merge(out, conv(val), each)
        else:
            _put(out, name, conv(val), each)
    return out


def _pp_fields(toks: pp.ParseResults) -> dict[str, Any]:
    return dict(toks.as_dict())

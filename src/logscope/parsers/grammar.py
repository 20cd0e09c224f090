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

import json
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
    label: str | None = field(default=None, compare=False)  # what docs/grammar.md calls it (``int``, ...)

    def pp(self) -> pp.ParserElement:
        el = pp.Regex(self.pattern, flags=self.flags).leave_whitespace()
        if self.label is not None:
            el.set_name(self.label)
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
    would; what the structure adds is that a learned path (``_Traces``) can narrow it down to the key
    it took (``key: (value)`` with the field name known in advance), which spares the key's lookup
    per line.
    """

    table: tuple[tuple[str, str], ...] = ()  # (printed key, field name)
    join: str = ": "
    value: str = ""
    vconv: Converter = to_str


def keyed(
    table: dict[str, str], value: str, vconv: Converter, name: str, *, join: str = ": ", each: bool = False
) -> Keyed:
    """A ``Keyed`` leaf: any of ``table``'s keys, ``join``, a value matched by ``value`` (no groups).

    No key may hold ``join``'s first character, and keys are tried longest first. Then where the
    leaf matches ``key<join>value``, no other key can: a longer key would have to hold that
    character, and a shorter one is tried after ``key``. So ``key<join>(value)`` takes exactly the
    same text as the leaf where the leaf took ``key`` (what ``_Traces``' paths rely on), and the key
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
    label = "( " + " / ".join(json.dumps(k) for k in table) + f" ) {json.dumps(join)} /{value}/"  # BNF text
    return Keyed(
        f"(?:{keys}){re.escape(join)}(?:{value})",
        name,
        conv,
        each=each,
        label=label,
        table=tuple(table.items()),
        join=join,
        value=value,
        vconv=vconv,
    )


def _flag_letters(flags: int) -> str:
    letters = ""
    if flags & re.IGNORECASE:
        letters += "i"
    if flags & re.DOTALL:
        letters += "s"
    return letters


def Int(name: str | None = None) -> Leaf:  # noqa: N802 - vocabulary reads like a type
    """An integer, thousands separators allowed."""
    return Leaf(INT, name, to_int, label="int")


def Float(name: str | None = None) -> Leaf:  # noqa: N802
    """A float (also integers, ``nan``, ``inf``, thousands separators)."""
    return Leaf(FLOAT, name, to_float, label="float")


def Word(name: str | None = None) -> Leaf:  # noqa: N802
    """A run of non-space characters."""
    return Leaf(r"\S++", name, to_str, label="word")


def Rest(name: str | None = None) -> Leaf:  # noqa: N802
    """Everything to the end of the record (newlines included)."""
    return Leaf(r"[\s\S]*+", name, to_str, label="rest")


def Until(stop: str, name: str | None = None, conv: Converter = to_str) -> Leaf:  # noqa: N802
    """Text up to (not including) the first occurrence of ``stop`` (pyparsing's ``SkipTo``)."""
    return Leaf(rf"[\s\S]*?(?={re.escape(stop)})", name, conv, label=f"text up to {stop!r}")


def NumList(name: str, sep: str = ", ") -> Leaf:  # noqa: N802
    """A separated list of floats, e.g. per-position acceptance ``0.600, 0.385, 0.215``."""
    pattern = f"{FLOAT}(?:{re.escape(sep)}{FLOAT})*+"

    def floats(text: str) -> list[float]:
        parts = text.split(sep)
        try:  # float refuses a thousands separator: only then is to_float needed
            return list(map(float, parts))
        except ValueError:
            return [to_float(x) for x in parts]

    return Leaf(pattern, name, floats, label=f"float list by {sep!r}")


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
        item = self.item.pp().set_name("item")  # one rule of its own in docs/grammar.md
        return (item + pp.ZeroOrMore(sep + item).leave_whitespace()).leave_whitespace()

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
        owner = [
            next((b, *sp) for b, sp in enumerate(spans) if sp[0] <= i < sp[1]) for i in range(len(sub.groups))
        ]
        item_rx = re.compile(src)
        plain = re.sub(r"\(\?P<g\d+>", "(?:", src)
        sep = self.sep
        groups = sub.groups
        each = sub.each

        def split(span: str) -> dict[str, Any]:
            out: dict[str, Any] = {}
            pos = 0
            while True:
                m = item_rx.match(span, pos)
                if m is None:
                    break
                last = m.lastindex  # every capturing group is one of ours, numbered in creation order
                if last is not None:
                    _branch, first, end = owner[last - 1]
                    for i in range(first, end):
                        val = m.group(i + 1)
                        if val is not None:
                            _g, name, conv = groups[i]
                            _put(out, name, conv(val), each)
                pos = m.end()
                if not span.startswith(sep, pos):
                    break
                pos += len(sep)
            return out

        gname = ctx.group(MERGE, split)
        ctx.each |= sub.each
        return f"(?P<{gname}>(?:{plain})(?:{re.escape(sep)}(?:{plain}))*+)"


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


class _NoTrace(Exception):
    """A grammar part that ``_Traces`` does not flatten (a field list inside a field list)."""


_Path = tuple[re.Pattern[str], Callable[[str], dict[str, Any] | None]]  # a path's flat regex, reader


class _Traces:
    """The paths (which branch of each choice, which optionals, which items) a grammar's matches have
    taken, each compiled into one flat regex and one reader: the fast path of ``Grammar.match``.

    Why it is exact. Every element of a compiled grammar is atomic (leaves and choices are ``(?>...)``,
    optionals and repetitions possessive), so the regex never backtracks into an element: matching
    is deterministic, each element's extent depends only on the text and where it starts. A path
    (``_walk``) is therefore a function of the text. Its flat regex (``_flat``) keeps the taken branch
    of each choice behind a guard that the earlier branches fail there (``(?!earlier)(?>taken)``), a
    present optional as its item, an absent one as a guard that it fails (``(?!item)``), and a field
    list's items one by one, with a guard that no further ``sep item`` follows. A text that matches
    the flat regex thus takes, in the grammar's own regex, exactly that path: the same groups take
    part with the same text, so the reader gives the same fields as the extractor. A guard is left
    out where it cannot fire: the earlier branch's literal start and the taken branch's disagree.
    A grammar that may start anywhere (``search``) and begins with a literal is matched at the first
    occurrence of that literal only (an earlier start, which the grammar's regex would prefer, cannot
    exist then); one that does not begin with a literal gets no paths.

    The reader is written out per path (``_path_reader``): the fields the extractor would build, as
    one dict expression. Paths are kept most recent first: a log's lines come in runs of one shape. A
    text that none of the ``TRIES`` most recent paths fits takes the grammar's regex, and its path
    goes first (compiled once: at most ``CACHE`` paths per grammar are compiled).
    """

    LIMIT = 16  # paths kept in recency order
    TRIES = 4  # of them tried before the grammar's regex
    CACHE = 256  # compiled paths kept per grammar (a path met again is not compiled again)

    def __init__(self, g: Grammar) -> None:
        self.expr = g.expr
        self.search = g.search
        self.each = g._compiled[2]
        self.lead = _first_lit(g.expr) if g.search else ""
        self.known: list[_Path] = []
        self.first: Callable[[str], dict[str, Any] | None] = _no_path  # the reader of known[0]
        self.compiled: dict[Any, _Path | None] = {}  # path -> its regex and reader (None: not usable)
        self._leaf_rx: dict[int, re.Pattern[str]] = {}

    def read(self, text: str) -> dict[str, Any] | None:
        """The fields of ``text`` by the first of the ``TRIES`` most recent paths that fits it, else None."""
        got = self.first(text)
        return got if got is not None or len(self.known) < 2 else self.read_older(text)

    def read_older(self, text: str) -> dict[str, Any] | None:
        """``read`` past the most recent path; the path that fits goes first (a log's lines come in
        runs of the same shape)."""
        known = self.known
        for k in range(1, min(len(known), self.TRIES)):
            got = known[k][1](text)
            if got is not None:
                known.insert(0, known.pop(k))
                self.first = known[0][1]
                return got
        return None

    def learn(self, text: str, start: int, fields: dict[str, Any]) -> None:
        """Put the path of ``text`` (matched by the grammar at ``start``, giving ``fields``) first."""
        if self.search and text.find(self.lead) != start:
            return
        walked = _walk(self.expr, text, start, self._leaf_rx)
        if walked is None:
            return
        path = walked[1]
        if path not in self.compiled:
            if len(self.compiled) >= self.CACHE:
                return
            self.compiled[path] = self._compile(path, text, start, fields)
        entry = self.compiled[path]
        if entry is None:
            return
        if entry in self.known:
            self.known.remove(entry)
        self.known.insert(0, entry)
        del self.known[self.LIMIT :]
        self.first = entry[1]

    def _compile(self, path: Any, text: str, start: int, fields: dict[str, Any]) -> _Path | None:
        ctx = _Ctx()
        ops: list[tuple[Any, ...]] = []
        keys: dict[int, str] = {}
        try:
            src = _flat(self.expr, path, ctx, ops, keys)
            rx = re.compile(src)
            reader = _path_reader(ctx.groups, ops, keys, self.each, rx, self.lead)
        except _NoTrace:
            return None
        # a check, not a proof: a path whose reading differs from the extractor's is never used
        # (``learn`` comes here only for a search grammar's start at the lead's first occurrence)
        got = reader(text)
        if got is None or not _same_fields(got, fields):
            return None
        return rx, reader


def _no_path(_text: str) -> None:
    """``_Traces.first`` before any path is known."""
    return None


def _first_lit(node: Node) -> str:
    """The literal a node's every match starts with ("" when it has none)."""
    while isinstance(node, Seq) and node.items:
        node = node.items[0]
    return node.text if isinstance(node, Lit) and node.text else ""


def _starts(node: Node) -> list[str] | None:
    """Literal starts, one of which every match of ``node`` begins with (None: not known)."""
    if isinstance(node, Seq):
        return _starts(node.items[0]) if node.items else None
    if isinstance(node, Lit | Flag):
        return [node.text] if node.text else None
    if isinstance(node, Keyed):
        return [k + node.join for k, _f in node.table]
    if isinstance(node, Alt):
        out: list[str] = []
        for item in node.items:
            got = _starts(item)
            if got is None:
                return None
            out += got
        return out
    return None


def _disjoint(a: list[str] | None, b: list[str] | None) -> bool:
    """No text can start with one of ``a`` and one of ``b`` (at the same place)."""
    if a is None or b is None:
        return False
    return all(not x.startswith(y[: len(x)]) and not y.startswith(x[: len(y)]) for x in a for y in b)


def _node_rx(node: Node) -> str:
    """A node's regex with its groups made non-capturing (for guards)."""
    return _GROUP.sub("(?:", node.rx(_Ctx()))


def _walk(node: Node, text: str, pos: int, leaf_rx: dict[int, re.Pattern[str]]) -> tuple[int, Any] | None:
    """(end, path) of ``node`` matched at ``pos`` as the grammar's regex matches it, or None.

    Element by element: each element's match is fixed by where it starts (see ``_Traces``). A path is
    a nested tuple: a sequence's items' paths, ``(branch, path)`` for a choice, ``(1, path)``/``(0,)``
    for an optional, the items' paths for a field list, the key for a keyed leaf, else None."""
    if isinstance(node, Lit | Flag):
        return (pos + len(node.text), None) if text.startswith(node.text, pos) else None
    if isinstance(node, Seq):
        paths = []
        for item in node.items:
            got = _walk(item, text, pos, leaf_rx)
            if got is None:
                return None
            pos = got[0]
            paths.append(got[1])
        return pos, tuple(paths)
    if isinstance(node, Alt):
        for i, item in enumerate(node.items):
            got = _walk(item, text, pos, leaf_rx)
            if got is not None:
                return got[0], (i, got[1])
        return None
    if isinstance(node, Opt):
        got = _walk(node.item, text, pos, leaf_rx)
        return (pos, (0,)) if got is None else (got[0], (1, got[1]))
    if isinstance(node, Many):
        got = _walk(node.item, text, pos, leaf_rx)
        if got is None:
            return None
        pos, items = got[0], [got[1]]
        while text.startswith(node.sep, pos):
            got = _walk(node.item, text, pos + len(node.sep), leaf_rx)
            if got is None:
                break
            pos = got[0]
            items.append(got[1])
        return pos, tuple(items)
    rx = leaf_rx.get(id(node))
    if rx is None:
        rx = leaf_rx[id(node)] = re.compile(node.rx(_Ctx()))
    m = rx.match(text, pos)
    if m is None:
        return None
    if isinstance(node, Keyed) and node.name is not None:
        return m.end(), m.group().partition(node.join)[0]
    return m.end(), None


def _flat(
    node: Node, path: Any, ctx: _Ctx, ops: list[tuple[Any, ...]], keys: dict[int, str], in_many: bool = False
) -> str:
    """The flat regex of ``node`` taking ``path``; ``ops`` gets what the extractor does with each
    group (``("put", group)``, or ``("many", [groups])`` for a field list's items), ``keys`` the
    field name of each keyed group."""
    if isinstance(node, Seq):
        return "".join(_flat(it, p, ctx, ops, keys, in_many) for it, p in zip(node.items, path, strict=True))
    if isinstance(node, Alt):
        b, sub = path
        taken = node.items[b]
        earlier = [it for it in node.items[:b] if not _disjoint(_starts(it), _starts(taken))]
        guard = f"(?!{'|'.join(f'(?:{_node_rx(it)})' for it in earlier)})" if earlier else ""
        return f"{guard}(?>{_flat(taken, sub, ctx, ops, keys, in_many)})"
    if isinstance(node, Opt):
        if path[0]:
            return f"(?>{_flat(node.item, path[1], ctx, ops, keys, in_many)})"
        return f"(?!{_node_rx(node.item)})"
    if isinstance(node, Many):
        if in_many:
            raise _NoTrace
        items: list[tuple[Any, ...]] = []
        parts = [_flat(node.item, p, ctx, items, keys, True) for p in path]
        ops.append(("many", [gi for _op, gi in items], _many_each(node)))
        sep = re.escape(node.sep)
        return sep.join(parts) + f"(?!{sep}(?:{_node_rx(node.item)}))"
    first = len(ctx.groups)
    if isinstance(node, Keyed) and node.name is not None:
        gname = ctx.group(node.name, node.vconv, node.each)
        keys[first] = dict(node.table)[path]
        src = f"(?>{re.escape(path + node.join)}(?P<{gname}>{node.value}))"
    else:
        src = node.rx(ctx)
    ops.extend(("put", gi) for gi in range(first, len(ctx.groups)))
    return src


def _many_each(node: Many) -> set[str]:
    """The names a field list collects as lists (its split's ``each``)."""
    sub = _Ctx()
    for alt in node.item.items if isinstance(node.item, Alt) else (node.item,):
        alt.rx(sub)
    return sub.each


def _path_reader(
    groups: list[tuple[str, str, Converter]],
    ops: list[tuple[Any, ...]],
    keys: dict[int, str],
    each: set[str],
    rx: re.Pattern[str],
    lead: str,
) -> Callable[[str], dict[str, Any] | None]:
    """The function that reads a text by a path: its flat regex ``rx`` must match (a ``search``
    grammar's at the first occurrence of its ``lead``, see ``_Traces``), and its groups, all of which
    then take part, become the extractor's fields. None when the path does not fit the text.

    The dict is worked out here once, by doing what the extractor and a field list's split do with
    each group (``_put``, ``_merge``) on the groups' value expressions; the function evaluates every
    group's conversion (as the extractor does, also for a value a later one replaces) and returns
    the dict as one expression. Numbers go to ``int``/``float`` first; when one refuses (thousands
    separators), all are converted again by the grammar's own converters. Matching and reading are
    one function: a matched line is the hot path, and every call level costs as much as a field."""
    env: dict[str, Any] = {}
    fast, slow, value = [], [], []
    for i, (_g, _name, conv) in enumerate(groups):
        env[f"c{i}"] = conv
        plain = _PLAIN.get(conv)
        fast.append(f"        v{i} = {plain or f'c{i}'}(g[{i}])")
        slow.append(f"        v{i} = c{i}(g[{i}])")
        if i in keys:
            env[f"n{i}"] = keys[i]
            value.append(f"(n{i}, v{i})")
        else:
            value.append(f"v{i}")
    out: dict[str, Any] = {}
    for op in ops:
        if op[0] == "put":
            name = groups[op[1]][1]
            if name in each:
                out.setdefault(name, []).append(value[op[1]])
            else:
                out[name] = value[op[1]]
            continue
        _op, picks, sub_each = op
        sub: dict[str, Any] = {}
        for gi in picks:
            name = groups[gi][1]
            if name in sub_each:
                sub.setdefault(name, []).append(value[gi])
            else:
                sub[name] = value[gi]
        for name, v in sub.items():  # _merge
            if name in each:
                if not isinstance(v, list):
                    raise _NoTrace
                out.setdefault(name, []).extend(v)
            else:
                out[name] = v
    entries = [f"{k!r}: [{', '.join(v)}]" if isinstance(v, list) else f"{k!r}: {v}" for k, v in out.items()]
    env["_match"], env["_lead"] = rx.match, lead
    body = ["def read(text):"]
    if lead:
        body += [
            "    at = text.find(_lead)",
            "    if at < 0:",
            "        return None",
            "    m = _match(text, at)",
        ]
    else:
        body.append("    m = _match(text)")
    body += ["    if m is None:", "        return None", "    g = m.groups()"]
    if fast != slow:
        body += ["    try:", *fast, "    except ValueError:", *slow]
    else:
        body += [line[4:] for line in slow]
    body.append(f"    return {{{', '.join(entries)}}}")
    exec("\n".join(body), env)  # noqa: S102 - our own code, built from the path's group list
    fn: Callable[[str], dict[str, Any] | None] = env["read"]
    return fn


_PLAIN: dict[Converter, str] = {
    to_int: "int",
    to_float: "float",
}  # what the converter is, on text without separators


def _same_fields(a: Any, b: Any) -> bool:
    """Equal fields, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same_fields(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(_same_fields(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and a == b


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

    @cached_property
    def _traces(self) -> _Traces | None:
        if self.search and not _first_lit(self.expr):
            return None
        return _Traces(self)

    def match(self, text: str) -> dict[str, Any] | None:
        """Fast path: a learned path's flat regex, else the compiled regex. Returns the fields, or None
        when it does not match."""
        traces = self._traces
        if traces is not None:
            got = traces.first(text)  # (read() without its call: this is the hot path)
            if got is not None or (len(traces.known) > 1 and (got := traces.read_older(text)) is not None):
                return got
        rx = self._compiled[0]
        m = rx.search(text) if self.search else rx.match(text)
        if m is None:
            return None
        out = self._extract(m)
        if traces is not None:
            traces.learn(text, m.start(), out)
        return out

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


def _extractor(
    groups: list[tuple[str, str, Converter]], each: set[str]
) -> Callable[[re.Match[str]], dict[str, Any]]:
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
        plain = _PLAIN.get(conv)
        if plain is not None:
            # a number without thousands separators is read directly; int/float refuse one with them
            body += [
                "        try:",
                f"            x = {plain}(v)",
                "        except ValueError:",
                f"            x = {conv.__name__}(v)",
            ]
            value = "x"
        else:
            value = f"c{i}(v)"
        if name == MERGE:  # merged into nothing yet: the field list's own (new) dict is the result
            body += [
                "        if out:",
                f"            _merge(out, {value}, each)",
                "        else:",
                f"            out = {value}",
            ]
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
